// A stream layer under Asio's TLS stream that moves several TLS records per
// syscall while a body streams. Asio's ssl::stream reads from its next layer
// at most 17 KiB (one record) at a time and writes each record as it is
// sealed, so an intercepted body costs a recv, a send and a wake-up of the
// peer per 16 KiB. While batching (Batch(true)) this layer reads ahead up to
// kBatchBytes from the stream below and hands it out a record at a time, and
// holds what is written until Flush() or until kBatchBytes are held.
// Outside a batch it passes reads and writes straight through and holds no
// memory: handshakes, heads and idle keep-alive waits cost nothing extra.
// The layer below keeps its own deadlines (basic_stream's expires_after).
#pragma once

// First: Boost 1.74's awaitable.hpp uses std::exchange without including it.
#include <utility>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/error.hpp>
#include <cstddef>
#include <type_traits>
#include <vector>

namespace mojoup::credproxy {

template <class Next>
class Batched {
 public:
  static constexpr std::size_t kBatchBytes = 64 * 1024;
  using next_layer_type = std::remove_reference_t<Next>;
  // What Asio's ssl::stream asks of its next layer: Beast's basic_stream
  // gives it its socket.
  using lowest_layer_type = typename next_layer_type::socket_type;
  using executor_type = typename next_layer_type::executor_type;

  template <class Arg>
  explicit Batched(Arg&& next) : next_(std::forward<Arg>(next)) {}

  executor_type get_executor() { return next_.get_executor(); }
  next_layer_type& next_layer() { return next_; }
  lowest_layer_type& lowest_layer() { return next_.socket(); }

  // Starts or ends a batch. Ending one does not flush: call Flush() first.
  // Read-ahead bytes still held are handed out before the layer below is
  // read again.
  void Batch(bool on) {
    batching_ = on;
    Release();
  }
  // Bytes read ahead and not yet handed out.
  std::size_t ahead() const { return in_end_ - in_begin_; }
  std::size_t held() const { return out_.size(); }

  // Writes what is held.
  boost::asio::awaitable<void> Flush(boost::beast::error_code& ec) {
    if (!out_.empty()) {
      co_await boost::asio::async_write(
          next_, boost::asio::buffer(out_),
          boost::asio::redirect_error(boost::asio::use_awaitable, ec));
      out_.clear();
    }
    Release();
  }

  template <class Buffers, class Token>
  auto async_read_some(const Buffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::beast::error_code, std::size_t)>(
        [this](auto handler, const Buffers& into) { StartRead(std::move(handler), into); }, token,
        buffers);
  }

  template <class Buffers, class Token>
  auto async_write_some(const Buffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::beast::error_code, std::size_t)>(
        [this](auto handler, const Buffers& from) { StartWrite(std::move(handler), from); },
        token, buffers);
  }

 private:
  template <class Handler>
  void Post(Handler handler, boost::beast::error_code ec, std::size_t n) {
    auto executor = boost::asio::get_associated_executor(handler, next_.get_executor());
    boost::asio::post(executor,
                      boost::beast::bind_front_handler(std::move(handler), ec, n));
  }

  template <class Handler, class Buffers>
  void StartRead(Handler handler, const Buffers& into) {
    if (ahead() > 0 || boost::asio::buffer_size(into) == 0) {
      const std::size_t n = boost::asio::buffer_copy(
          into, boost::asio::buffer(in_.data() + in_begin_, ahead()));
      in_begin_ += n;
      Release();
      return Post(std::move(handler), {}, n);
    }
    if (!batching_) return next_.async_read_some(into, std::move(handler));
    in_.resize(kBatchBytes);
    auto executor = boost::asio::get_associated_executor(handler, next_.get_executor());
    next_.async_read_some(
        boost::asio::buffer(in_),
        boost::asio::bind_executor(
            executor, [this, into, handler = std::move(handler)](boost::beast::error_code ec,
                                                                  std::size_t got) mutable {
              in_begin_ = 0;
              in_end_ = got;
              const std::size_t n =
                  boost::asio::buffer_copy(into, boost::asio::buffer(in_.data(), got));
              in_begin_ = n;
              Release();
              std::move(handler)(ec, n);
            }));
  }

  template <class Handler, class Buffers>
  void StartWrite(Handler handler, const Buffers& from) {
    if (!batching_ && out_.empty()) return next_.async_write_some(from, std::move(handler));
    std::size_t n = 0;
    for (auto it = boost::asio::buffer_sequence_begin(from);
         it != boost::asio::buffer_sequence_end(from); ++it) {
      const boost::asio::const_buffer piece(*it);
      const char* bytes = static_cast<const char*>(piece.data());
      out_.insert(out_.end(), bytes, bytes + piece.size());
      n += piece.size();
    }
    if (batching_ && out_.size() < kBatchBytes) return Post(std::move(handler), {}, n);
    auto executor = boost::asio::get_associated_executor(handler, next_.get_executor());
    boost::asio::async_write(
        next_, boost::asio::buffer(out_),
        boost::asio::bind_executor(executor, [this, n, handler = std::move(handler)](
                                                 boost::beast::error_code ec, std::size_t) mutable {
          out_.clear();
          Release();
          std::move(handler)(ec, ec ? 0 : n);
        }));
  }

  // Outside a batch, buffers emptied go back to the allocator.
  void Release() {
    if (batching_) return;
    if (ahead() == 0 && !in_.empty()) {
      in_begin_ = in_end_ = 0;
      std::vector<char>().swap(in_);
    }
    if (out_.empty() && out_.capacity() > 0) std::vector<char>().swap(out_);
  }

  Next next_;
  bool batching_ = false;
  std::vector<char> in_;
  std::size_t in_begin_ = 0;
  std::size_t in_end_ = 0;
  std::vector<char> out_;
};

}  // namespace mojoup::credproxy
