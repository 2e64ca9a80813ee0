// TextPool and TextArena: distinct chunks until the pool is used up, reuse after a batch, every
// text kept intact (also past the pool and bigger than a chunk), and the helper faulting pages
// in ahead of use but not far beyond it.
#include "text_arena.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace stacksym::cli {
namespace {

// Whether the first page of the chunk at `chunk` is resident (mincore).
bool Resident(const char* chunk) {
  unsigned char state = 0;
  if (::mincore(const_cast<char*>(chunk), 1, &state) != 0) return false;
  return (state & 1) != 0;
}

bool BecomesResident(const char* chunk) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!Resident(chunk)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(TextPool, HandsOutDistinctChunksUntilUsedUp) {
  TextPool pool(5 * TextPool::kChunk - 1);  // rounded up to 5 chunks
  std::set<char*> chunks;
  for (int i = 0; i < 5; ++i) {
    char* c = pool.Take();
    ASSERT_NE(c, nullptr) << i;
    c[0] = 'x';
    c[TextPool::kChunk - 1] = 'y';  // the whole chunk is writable
    chunks.insert(c);
  }
  EXPECT_EQ(chunks.size(), 5u);
  EXPECT_EQ(pool.Take(), nullptr) << "a sixth chunk from a pool of five";
  pool.Reuse();
  EXPECT_EQ(pool.Take(), *chunks.begin()) << "after Reuse the first chunk comes again";
}

TEST(TextPool, ConcurrentTakesAreDistinct) {
  TextPool pool(64 * TextPool::kChunk);
  std::vector<std::vector<char*>> taken(4);
  std::vector<std::thread> threads;
  for (auto& mine : taken) {
    threads.emplace_back([&pool, &mine] {
      while (char* c = pool.Take()) mine.push_back(c);
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<char*> all;
  for (const auto& mine : taken) all.insert(mine.begin(), mine.end());
  EXPECT_EQ(all.size(), 64u);
}

TEST(TextPool, FaultsInAheadOfUseButNotFarBeyond) {
  constexpr size_t kChunks = 64;
  TextPool pool(kChunks * TextPool::kChunk);
  char* first = pool.Take();
  ASSERT_NE(first, nullptr);
  // Taken chunks come in order: chunk k is at first + k * kChunk.
  EXPECT_TRUE(BecomesResident(first + TextPool::kChunksAhead * TextPool::kChunk))
      << "the helper did not fault in the chunks ahead of the one taken";
  // Time enough for a helper that does not stop to fault in all 16 MB (far enough that a huge
  // page under THP "always" cannot cover the chunk either).
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(Resident(first + 40 * TextPool::kChunk)) << "faulted in far beyond any use";
  for (size_t k = 1; k < 30; ++k) ASSERT_NE(pool.Take(), nullptr);
  EXPECT_TRUE(BecomesResident(first + (29 + TextPool::kChunksAhead) * TextPool::kChunk))
      << "the helper did not follow the chunks taken";
}

TEST(TextArena, KeepsEveryTextIntactPastThePoolAndBeyondAChunk) {
  TextPool pool(2 * TextPool::kChunk);
  TextArena arena(&pool);
  std::vector<std::string> texts;
  std::vector<std::string_view> kept;
  for (size_t i = 0; i < 3000; ++i) {
    // Mostly answer-sized texts, an empty one, and now and then one bigger than a chunk.
    size_t size = i == 7 ? 0 : i % 500 == 3 ? TextPool::kChunk + 17 : 200 + i % 1300;
    texts.push_back(std::string(size, static_cast<char>('a' + i % 26)));
    kept.push_back(arena.Add(texts.back()));
  }
  for (size_t i = 0; i < texts.size(); ++i) ASSERT_EQ(kept[i], texts[i]) << i;
}

TEST(TextArena, WorksWithoutAPool) {
  TextArena arena;
  std::string big(3 * TextPool::kChunk * 8, 'z');
  EXPECT_EQ(arena.Add("abc"), "abc");
  EXPECT_EQ(arena.Add(big), big);
  EXPECT_EQ(arena.Add("def"), "def");
}

}  // namespace
}  // namespace stacksym::cli
