// One byte stream type for every stream the proxy relays over: a client's
// socket, an upstream's, and TLS (over a Batched layer) on either. Asio's
// and Beast's composed operations are templates over their stream, and the
// relays (forward.h) are coroutines over two of them, so every pair of
// stream types used to compile every relay again. Over AnyStream each is
// compiled once; only a read and a write per concrete type stay templates
// (any_stream.cc).
//
// An AnyStream is Asio's AsyncReadStream and AsyncWriteStream, and carries
// what the relays ask of the stream beneath: how much one read gives at
// most, the Batched layer's batch, and the socket's close and deadline.
// Handshakes and anything else that needs the concrete type stay on it.
//
//   UpstreamTls& tls = ...;
//   AnyStream up = Erase(tls);  // refers to tls; must not outlive it
//   co_await http::async_write(up, request, use_awaitable);
//
// As on the stream it erases, one read and one write may be in flight at once.
#pragma once

// First: Boost 1.74's awaitable.hpp uses std::exchange without including it.
#include <utility>

#include <array>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/detail/handler_cont_helpers.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <cstddef>
#include <memory>

#include "batched_stream.h"

namespace mojoup::credproxy {

// What one read from a socket gives the relays at most.
inline constexpr std::size_t kRelayChunk = 64 * 1024;

class AnyStream {
 public:
  using executor_type = boost::asio::any_io_executor;
  // Buffers past this many in one call wait for the next one: Asio's own
  // limit on the buffers one socket call gathers.
  static constexpr std::size_t kMaxPieces = 64;

  // A read's or a write's completion handler, its type erased. Move-only,
  // as Asio's handlers are; it keeps the executor its handler is associated
  // with, so that the concrete stream completes it there, and says whether
  // it continues its caller's operation. Its memory is freed before the
  // handler runs, so that the handler may start the next operation.
  class Handler {
   public:
    using executor_type = AnyStream::executor_type;

    template <class Inner>
    Handler(Inner inner, const executor_type& fallback)
        : executor_(boost::asio::get_associated_executor(inner, fallback)),
          continuation_(boost_asio_handler_cont_helpers::is_continuation(inner)),
          call_(std::make_unique<Call<Inner>>(std::move(inner))) {}

    executor_type get_executor() const noexcept { return executor_; }

    void operator()(boost::beast::error_code ec, std::size_t n) {
      call_.release()->Complete(ec, n);
    }

    friend bool asio_handler_is_continuation(Handler* handler) { return handler->continuation_; }

   private:
    struct Base {
      virtual ~Base() = default;
      // Runs the handler and frees this.
      virtual void Complete(boost::beast::error_code ec, std::size_t n) = 0;
    };
    template <class Inner>
    struct Call final : Base {
      explicit Call(Inner inner) : handler(std::move(inner)) {}
      void Complete(boost::beast::error_code ec, std::size_t n) override {
        Inner run(std::move(handler));
        delete this;
        std::move(run)(ec, n);
      }
      Inner handler;
    };

    executor_type executor_;
    bool continuation_;
    std::unique_ptr<Base> call_;
  };

  // The buffers of one read or write, a buffer sequence over an array the
  // concrete side keeps for as long as the operation runs.
  template <class Buffer>
  class Pieces {
   public:
    using value_type = Buffer;
    using const_iterator = const Buffer*;
    Pieces(const Buffer* first, std::size_t count) : first_(first), count_(count) {}
    const Buffer* begin() const { return first_; }
    const Buffer* end() const { return first_ + count_; }

   private:
    const Buffer* first_;
    std::size_t count_;
  };

  // What a concrete stream does behind an AnyStream (any_stream.cc).
  class Ops {
   public:
    Ops() = default;
    virtual ~Ops() = default;
    Ops(const Ops&) = delete;
    Ops& operator=(const Ops&) = delete;

    virtual executor_type Executor() = 0;
    virtual void ReadSome(Pieces<boost::asio::mutable_buffer> into, Handler handler) = 0;
    virtual void WriteSome(Pieces<boost::asio::const_buffer> from, Handler handler) = 0;
    virtual std::size_t ReadMost() const = 0;
    // The Batched layer's, or nothing (a stream without one batches nothing).
    virtual void Batch(bool on) = 0;
    virtual std::size_t Ahead() const = 0;
    virtual std::size_t Held() const = 0;
    virtual boost::asio::awaitable<void> Flush(boost::beast::error_code& ec) = 0;
    // The socket's, beneath every layer.
    virtual void Close() = 0;
    virtual void ExpiresNever() = 0;

    template <class Buffers>
    void Read(const Buffers& buffers, Handler handler) {
      ReadSome(Gather(buffers, reading_), std::move(handler));
    }
    template <class Buffers>
    void Write(const Buffers& buffers, Handler handler) {
      WriteSome(Gather(buffers, writing_), std::move(handler));
    }

   private:
    template <class Buffers, class Buffer>
    static Pieces<Buffer> Gather(const Buffers& buffers, std::array<Buffer, kMaxPieces>& into) {
      std::size_t n = 0;
      for (auto it = boost::asio::buffer_sequence_begin(buffers);
           it != boost::asio::buffer_sequence_end(buffers) && n < kMaxPieces; ++it) {
        into[n++] = Buffer(*it);
      }
      return Pieces<Buffer>(into.data(), n);
    }

    // Where the buffers of the read and the write in flight are kept.
    std::array<boost::asio::mutable_buffer, kMaxPieces> reading_;
    std::array<boost::asio::const_buffer, kMaxPieces> writing_;
  };

  explicit AnyStream(std::unique_ptr<Ops> ops)
      : ops_(std::move(ops)), executor_(ops_->Executor()) {}

  executor_type get_executor() const noexcept { return executor_; }

  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::beast::error_code, std::size_t)>(
        [this](auto handler, const MutableBuffers& into) {
          ops_->Read(into, Handler(std::move(handler), executor_));
        },
        token, buffers);
  }

  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::beast::error_code, std::size_t)>(
        [this](auto handler, const ConstBuffers& from) {
          ops_->Write(from, Handler(std::move(handler), executor_));
        },
        token, buffers);
  }

  // What one read gives at most: a TLS stream hands over one record's
  // plaintext (16 KiB at most) a read, a socket up to kRelayChunk.
  std::size_t read_most() const { return ops_->ReadMost(); }

  // The Batched layer under a TLS stream (batched_stream.h); without one,
  // nothing is batched, ahead or held, and Flush writes nothing.
  void Batch(bool on) { ops_->Batch(on); }
  std::size_t ahead() const { return ops_->Ahead(); }
  std::size_t held() const { return ops_->Held(); }
  boost::asio::awaitable<void> Flush(boost::beast::error_code& ec) { return ops_->Flush(ec); }

  // Closes the socket beneath every layer.
  void Close() { ops_->Close(); }
  // Turns off the socket's own deadline (beast::basic_stream's).
  void ExpiresNever() { ops_->ExpiresNever(); }

 private:
  std::unique_ptr<Ops> ops_;
  executor_type executor_;
};

// The proxy's streams, erased: a client's connection, an upstream's, and TLS
// over each (server.h names them ClientStream, beast::tcp_stream, ClientTls
// and UpstreamTls).
using ClientSocketStream = boost::beast::basic_stream<boost::asio::generic::stream_protocol>;
AnyStream Erase(ClientSocketStream& stream);
AnyStream Erase(boost::beast::tcp_stream& stream);
AnyStream Erase(boost::asio::ssl::stream<Batched<ClientSocketStream&>>& stream);
AnyStream Erase(boost::asio::ssl::stream<Batched<boost::beast::tcp_stream>>& stream);

}  // namespace mojoup::credproxy
