#pragma once
// Point-to-point byte messages between neighbour ranks. Two patterns:
//  - discover(): each rank knows whom it sends to but not who sends to it. Uses the NBX algorithm
//    (Hoefler, Siebert, Lumsdaine 2010: synchronous sends + non-blocking barrier), so no rank ever
//    learns anything about non-neighbours and the cost does not grow with the rank count.
//  - exchange(): both sides know their partners (a plan built by an earlier discover()).
// Received messages are returned sorted by source rank, so what is built from them is deterministic.
#include <mpi.h>

#include <map>
#include <vector>

namespace nendo {

using Bytes = std::vector<unsigned char>;

struct Message {
  int rank = 0;
  Bytes bytes;
};

// Owns a duplicate of the communicator, so its messages never mix with anyone else's. Every call
// is collective over the communicator.
class SparseExchange {
 public:
  explicit SparseExchange(MPI_Comm comm);
  ~SparseExchange();
  SparseExchange(const SparseExchange&) = delete;
  SparseExchange& operator=(const SparseExchange&) = delete;
  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }

  // outgoing[r] goes to rank r (a message to self is delivered without MPI).
  std::vector<Message> discover(const std::map<int, Bytes>& outgoing) const;
  // Like discover(), but the sources are known: one message is received from each rank in `from`.
  std::vector<Message> exchange(const std::map<int, Bytes>& outgoing, const std::vector<int>& from) const;

  // Non-blocking exchange with known partners and sizes: posts a receive into each `receives`
  // buffer and a send of each `sends` buffer (none to self) and returns the requests; the buffers
  // must live until the caller's MPI_Waitall on them.
  struct Buffer {
    int rank;
    void* data;
    std::size_t bytes;
  };
  std::vector<MPI_Request> start(const std::vector<Buffer>& sends, const std::vector<Buffer>& receives) const;

  std::size_t bytes_sent() const { return bytes_sent_; }
  void reset_counters() { bytes_sent_ = 0; }

 private:
  // Starts a send per message (synchronous ones for NBX); a message to self goes straight to received.
  std::vector<MPI_Request> post_sends(const std::map<int, Bytes>& outgoing, int tag, bool synchronous,
                                      std::vector<Message>& received) const;
  MPI_Comm comm_;
  int rank_;
  // A rank can leave discover() while a slower one is still probing; its next round's messages
  // then carry the other tag, so they are never taken for this round's.
  mutable int round_ = 0;
  mutable std::size_t bytes_sent_ = 0;
};

// Appending and reading plain values in byte buffers.
template <class T>
void put(Bytes& out, const T& value) {
  const auto* p = reinterpret_cast<const unsigned char*>(&value);
  out.insert(out.end(), p, p + sizeof(T));
}

class ByteReader {
 public:
  explicit ByteReader(const Bytes& bytes) : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}
  template <class T>
  T get();
  const unsigned char* take(std::size_t n);
  bool done() const { return p_ == end_; }

 private:
  const unsigned char* p_;
  const unsigned char* end_;
};

}  // namespace nendo

#include <cstring>

#include "core/Error.hpp"

namespace nendo {
template <class T>
T ByteReader::get() {
  T value;
  std::memcpy(&value, take(sizeof(T)), sizeof(T));
  return value;
}
inline const unsigned char* ByteReader::take(std::size_t n) {
  if (static_cast<std::size_t>(end_ - p_) < n) throw Error("truncated message");
  const unsigned char* p = p_;
  p_ += n;
  return p;
}
}  // namespace nendo
