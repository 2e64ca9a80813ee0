// What both wire formats say about a process: its service name and executable name, decided in
// one place so that OTLP's resource attributes and Pyroscope's labels agree.
#pragma once

#include <string>
#include <string_view>

#include "stacksym/export.h"

namespace stacksym::exporter {

// What the profile knows of process `pid` (only its pid when nothing).
inline ProfileProcess ProcessOf(const Profile& profile, uint32_t pid) {
  if (const ProfileProcess* known = profile.FindProcess(pid)) return *known;
  ProfileProcess process;
  process.pid = pid;
  return process;
}

// The file name of the process's executable ("" when unknown).
inline std::string_view ExecutableName(const ProfileProcess& process) {
  std::string_view path = process.executable;
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// service.name / service_name, never empty: the window's, else the executable's file name,
// else the process's name, else `thread_name` (a thread's comm), else "unknown_service" (the
// OTel SDKs' own fallback).
inline std::string ServiceName(const ExportWindow& window, const ProfileProcess& process,
                               std::string_view thread_name) {
  if (!window.service_name.empty()) return window.service_name;
  if (!ExecutableName(process).empty()) return std::string(ExecutableName(process));
  if (!process.name.empty()) return process.name;
  if (!thread_name.empty()) return std::string(thread_name);
  return "unknown_service";
}

}  // namespace stacksym::exporter
