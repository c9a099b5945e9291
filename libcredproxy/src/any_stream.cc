// The concrete side of AnyStream: one read and one write per stream type,
// compiled here once, with one handler type.
#include "any_stream.h"

#include <boost/asio/ssl.hpp>
#include <type_traits>

namespace mojoup::credproxy {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;

template <class Stream>
struct IsTls : std::false_type {};
template <class Next>
struct IsTls<asio::ssl::stream<Next>> : std::true_type {};

template <class Stream>
struct IsBatchedTls : std::false_type {};
template <class Next>
struct IsBatchedTls<asio::ssl::stream<Batched<Next>>> : std::true_type {};

template <class Stream>
class StreamOps final : public AnyStream::Ops {
 public:
  explicit StreamOps(Stream& stream) : stream_(stream) {}

  AnyStream::executor_type Executor() override { return stream_.get_executor(); }

  void ReadSome(AnyStream::Pieces<asio::mutable_buffer> into, AnyStream::Handler handler) override {
    stream_.async_read_some(into, std::move(handler));
  }
  void WriteSome(AnyStream::Pieces<asio::const_buffer> from, AnyStream::Handler handler) override {
    stream_.async_write_some(from, std::move(handler));
  }

  std::size_t ReadMost() const override { return IsTls<Stream>::value ? 16 * 1024 : kRelayChunk; }

  void Batch(bool on) override {
    if constexpr (kBatched) stream_.next_layer().Batch(on);
  }
  std::size_t Ahead() const override {
    if constexpr (kBatched) return stream_.next_layer().ahead();
    return 0;
  }
  std::size_t Held() const override {
    if constexpr (kBatched) return stream_.next_layer().held();
    return 0;
  }
  asio::awaitable<void> Flush(beast::error_code& ec) override {
    if constexpr (kBatched) co_await stream_.next_layer().Flush(ec);
    co_return;
  }

  void Close() override { beast::get_lowest_layer(stream_).close(); }
  void ExpiresNever() override { beast::get_lowest_layer(stream_).expires_never(); }

 private:
  static constexpr bool kBatched = IsBatchedTls<Stream>::value;
  Stream& stream_;
};

template <class Stream>
AnyStream Erased(Stream& stream) {
  return AnyStream(std::make_unique<StreamOps<Stream>>(stream));
}

}  // namespace

AnyStream Erase(ClientSocketStream& stream) { return Erased(stream); }
AnyStream Erase(beast::tcp_stream& stream) { return Erased(stream); }
AnyStream Erase(asio::ssl::stream<Batched<ClientSocketStream&>>& stream) { return Erased(stream); }
AnyStream Erase(asio::ssl::stream<Batched<beast::tcp_stream>>& stream) { return Erased(stream); }

}  // namespace mojoup::credproxy
