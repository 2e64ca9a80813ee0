#include "remote/rpc_status.h"

namespace stacksym::remote {
namespace {

void Varint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

}  // namespace

std::string EncodeRpcStatus(RpcCode code, std::string_view message) {
  std::string out;
  // Field 1, varint (tag 0x08); an int32 is sign-extended to 64 bits on the wire.
  out.push_back(0x08);
  Varint(static_cast<uint64_t>(static_cast<int64_t>(code)), &out);
  if (!message.empty()) {
    out.push_back(0x12);  // field 2, length-delimited
    Varint(message.size(), &out);
    out.append(message);
  }
  return out;
}

void SetRpcStatus(HttpResponse& response, int http_status, RpcCode code, std::string_view message) {
  response.Set(http_status, EncodeRpcStatus(code, message), "application/x-protobuf");
}

}  // namespace stacksym::remote
