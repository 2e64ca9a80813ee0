// google.rpc.Status (googleapis' google/rpc/status.proto), the error body OTLP/HTTP answers
// with: code = 1 (int32, a google.rpc.Code), message = 2 (string), details = 3 (repeated Any,
// never written here). docs/wire-formats.md has the field numbers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "remote/http_transport.h"

namespace stacksym::remote {

// The google.rpc.Code values serve's proxies answer with.
enum class RpcCode : int32_t {
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kResourceExhausted = 8,
  kInternal = 13,
  kUnavailable = 14,
};

// The serialized Status (protobuf binary).
std::string EncodeRpcStatus(RpcCode code, std::string_view message);

// `response` set to `http_status` with the Status as an application/x-protobuf body.
void SetRpcStatus(HttpResponse& response, int http_status, RpcCode code, std::string_view message);

}  // namespace stacksym::remote
