// tool_runner.h — runs reference tools (readelf, nm) for differential tests and splits their
// output.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stacksym::testing {

// Runs `command` with /bin/sh and returns its stdout; *exit_code gets the exit status.
std::string RunTool(const std::string& command, int* exit_code = nullptr);
// True when `name` is found on PATH.
bool ToolAvailable(const std::string& name);
std::vector<std::string> SplitWhitespace(std::string_view line);
std::vector<std::string> SplitLines(const std::string& text);
// A path under the fixture directory of the build.
std::string Fixture(const std::string& name);
// Single-quotes a path for the shell.
std::string ShellQuote(const std::string& s);

}  // namespace stacksym::testing
