// libFuzzer target: what the sandbox service decodes from another process
// (service/protocol.h): the start request a client posts and a worker
// reads, the session document a client reads back, a worker's entry file,
// and the attach stream's frames. The bytes go to every decoder. Invariants:
// no decoder crashes, recurses without bound or reads past the bytes; what
// one accepts, its encoder writes back into a document the decoder accepts
// again and that encodes to the same bytes; frames come out whole, and each
// encodes back to the bytes it came from (but for the 3 reserved bytes,
// which the reader ignores).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "protocol/protocol.h"

namespace {

namespace service = mojoup::service;

void Require(bool holds) {
  if (!holds) std::abort();
}

void StartRequests(std::string_view text) {
  for (bool from_client : {false, true}) {
    auto start = service::ParseStartRequest(text, from_client);
    if (!start.ok()) continue;
    const std::string worker = service::WorkerStartJson(*start);
    auto again = service::ParseStartRequest(worker);
    Require(again.ok());
    Require(service::WorkerStartJson(*again) == worker);
    const std::string client =
        service::StartRequestJson(start->request, start->options, start->secrets);
    Require(service::ParseStartRequest(client).ok());
  }
}

// What `parse` accepts, `write` writes, and `parse` reads back the same.
template <class Parse, class Write>
void RoundTrips(std::string_view text, Parse parse, Write write) {
  auto value = parse(text);
  if (!value.ok()) return;
  const std::string json = write(*value);
  auto again = parse(json);
  Require(again.ok());
  Require(write(*again) == json);
}

void Frames(std::string_view text) {
  service::FrameReader reader;
  reader.Add(text);
  std::size_t consumed = 0;
  for (;;) {
    auto frame = reader.Next();
    if (!frame.ok() || !frame->has_value()) break;
    const auto& [type, data] = **frame;
    Require(data.size() <= service::kMaxFrame);
    // The reader does not look at the 3 reserved bytes; the rest is the frame.
    std::string encoded = service::EncodeFrame(type, data);
    Require(encoded.size() <= text.size() - consumed);
    encoded.replace(1, 3, text.substr(consumed + 1, 3));
    Require(text.substr(consumed, encoded.size()) == encoded);
    consumed += encoded.size();
  }
  Require(consumed <= text.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  StartRequests(text);
  RoundTrips(text, service::ParseSession, service::SessionJson);
  RoundTrips(text, service::ParseWorkerEntry, service::WorkerEntryJson);
  Frames(text);
  return 0;
}
