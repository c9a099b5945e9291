// Inflater: undoes a response body's gzip or deflate coding as it streams,
// so that the scrubber sees the bytes a client would read. The proxy asks
// upstreams for `Accept-Encoding: identity`; this is for those that compress
// anyway.
//
//   Inflater inflater(Inflater::Coding::kGzip);
//   inflater.Input(piece);
//   std::string out;
//   while (inflater.Read(out, 64 * 1024) && !out.empty()) send(scrub(out));
//   ...
//   at the end of the body: inflater.ended() or the body was cut short.
//
// Output comes in bounded slices, so a small body that inflates to a large
// one is never held whole.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace mojoup::credproxy {

class Inflater {
 public:
  // gzip (and x-gzip) is RFC 1952, possibly several members one after the
  // other; deflate is RFC 1950 zlib, or raw RFC 1951 as some servers send it.
  enum class Coding { kGzip, kDeflate };

  explicit Inflater(Coding coding);
  ~Inflater();
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  // More coded bytes; kept until Read has decoded them.
  void Input(std::string_view piece);

  // Replaces `out` with up to `limit` decoded bytes; `out` empty when every
  // byte given so far is decoded. False when the data is not validly coded.
  bool Read(std::string& out, std::size_t limit);

  // Whether the coded stream came to its proper end.
  bool ended() const { return ended_ && pending_.size() == consumed_; }

 private:
  struct Stream;
  bool Start();

  Coding coding_;
  std::unique_ptr<Stream> stream_;
  std::string pending_;       // coded bytes given
  std::size_t consumed_ = 0;  // of pending_, decoded
  bool started_ = false;
  bool ended_ = false;  // the last member ended
  bool failed_ = false;
};

}  // namespace mojoup::credproxy
