#include "inflater.h"

#include <zlib.h>

namespace mojoup::credproxy {
namespace {

// Decoded bytes are dropped from the front of the input once this many.
constexpr std::size_t kCompactAt = 64 * 1024;

}  // namespace

struct Inflater::Stream {
  z_stream z{};
  bool open = false;
  ~Stream() {
    if (open) inflateEnd(&z);
  }
};

Inflater::Inflater(Coding coding) : coding_(coding), stream_(std::make_unique<Stream>()) {}

Inflater::~Inflater() = default;

void Inflater::Input(std::string_view piece) {
  if (consumed_ == pending_.size() || consumed_ >= kCompactAt) {
    pending_.erase(0, consumed_);
    consumed_ = 0;
  }
  pending_.append(piece);
}

bool Inflater::Start() {
  // 15 + 32: a gzip or a zlib header, whichever comes.
  int window_bits = 15 + 32;
  if (coding_ == Coding::kDeflate) {
    // "deflate" means zlib (RFC 9110), but some servers send raw deflate:
    // a zlib header says which (RFC 1950: CM 8, CINFO <= 7, FCHECK).
    if (pending_.size() - consumed_ < 2) return true;  // wait for two bytes
    const auto cmf = static_cast<unsigned char>(pending_[consumed_]);
    const auto flg = static_cast<unsigned char>(pending_[consumed_ + 1]);
    const bool zlib = (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && ((cmf << 8) | flg) % 31 == 0;
    if (!zlib) window_bits = -15;
  }
  if (inflateInit2(&stream_->z, window_bits) != Z_OK) return false;
  stream_->open = true;
  started_ = true;
  return true;
}

bool Inflater::Read(std::string& out, std::size_t limit) {
  out.clear();
  if (failed_) return false;
  if (!started_ && consumed_ < pending_.size()) {
    if (!Start()) {
      failed_ = true;
      return false;
    }
  }
  if (!started_) return true;
  z_stream& z = stream_->z;
  out.resize(limit);
  std::size_t produced = 0;
  while (produced < limit && consumed_ < pending_.size()) {
    if (ended_) {
      // Another gzip member may follow (RFC 1952 2.2); after a deflate
      // stream nothing may.
      if (coding_ != Coding::kGzip || inflateReset(&z) != Z_OK) {
        failed_ = true;
        return false;
      }
      ended_ = false;
    }
    z.next_in = reinterpret_cast<Bytef*>(pending_.data() + consumed_);
    z.avail_in = static_cast<uInt>(pending_.size() - consumed_);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    z.avail_out = static_cast<uInt>(limit - produced);
    const int result = inflate(&z, Z_NO_FLUSH);
    consumed_ = pending_.size() - z.avail_in;
    produced = limit - z.avail_out;
    if (result == Z_STREAM_END) {
      ended_ = true;
      continue;
    }
    if (result == Z_BUF_ERROR) break;  // needs more input
    if (result != Z_OK) {
      failed_ = true;
      return false;
    }
  }
  out.resize(produced);
  return true;
}

}  // namespace mojoup::credproxy
