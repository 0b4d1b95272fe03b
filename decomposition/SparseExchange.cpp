#include "decomposition/SparseExchange.hpp"

#include <algorithm>
#include <climits>

#include "core/Mpi.hpp"

namespace nendo {
namespace {

constexpr int kDiscoverTag = 7001;  // and 7002 on odd rounds
constexpr int kExchangeTag = 7003;
constexpr int kStartTag = 7004;

int checked_count(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX))
    throw Error("message of " + std::to_string(bytes) + " bytes exceeds MPI's int count");
  return static_cast<int>(bytes);
}

Message receive_probed(MPI_Comm comm, const MPI_Status& status, int tag) {
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  Message m;
  m.rank = status.MPI_SOURCE;
  m.bytes.resize(count);
  MPI_Recv(m.bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, tag, comm, MPI_STATUS_IGNORE);
  return m;
}

void sort_by_rank(std::vector<Message>& messages) {
  std::sort(messages.begin(), messages.end(),
            [](const Message& a, const Message& b) { return a.rank < b.rank; });
}

}  // namespace

SparseExchange::SparseExchange(MPI_Comm comm) : rank_(mpi::rank(comm)) { MPI_Comm_dup(comm, &comm_); }

SparseExchange::~SparseExchange() { MPI_Comm_free(&comm_); }

std::vector<MPI_Request> SparseExchange::post_sends(const std::map<int, Bytes>& outgoing, int tag,
                                                    bool synchronous, std::vector<Message>& received) const {
  std::vector<MPI_Request> sends;
  for (const auto& [r, bytes] : outgoing) {
    if (r == rank_) {
      received.push_back({r, bytes});
      continue;
    }
    bytes_sent_ += bytes.size();
    sends.emplace_back();
    if (synchronous)
      MPI_Issend(bytes.data(), checked_count(bytes.size()), MPI_BYTE, r, tag, comm_, &sends.back());
    else
      MPI_Isend(bytes.data(), checked_count(bytes.size()), MPI_BYTE, r, tag, comm_, &sends.back());
  }
  return sends;
}

std::vector<Message> SparseExchange::discover(const std::map<int, Bytes>& outgoing) const {
  const int tag = kDiscoverTag + (round_++ & 1);
  std::vector<Message> received;
  std::vector<MPI_Request> sends = post_sends(outgoing, tag, true, received);
  MPI_Request barrier = MPI_REQUEST_NULL;
  bool barrier_started = false;
  for (;;) {
    int arrived = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, tag, comm_, &arrived, &status);
    if (arrived) received.push_back(receive_probed(comm_, status, tag));
    if (!barrier_started) {
      int sent = 0;
      MPI_Testall(static_cast<int>(sends.size()), sends.data(), &sent, MPI_STATUSES_IGNORE);
      if (sent) {
        MPI_Ibarrier(comm_, &barrier);
        barrier_started = true;
      }
    } else {
      int all_done = 0;
      MPI_Test(&barrier, &all_done, MPI_STATUS_IGNORE);
      if (all_done) break;
    }
  }
  sort_by_rank(received);
  return received;
}

std::vector<Message> SparseExchange::exchange(const std::map<int, Bytes>& outgoing,
                                              const std::vector<int>& from) const {
  std::vector<Message> received;
  std::vector<MPI_Request> sends = post_sends(outgoing, kExchangeTag, false, received);
  for (int r : from) {
    if (r == rank_) continue;
    MPI_Status status;
    MPI_Probe(r, kExchangeTag, comm_, &status);
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    Message m{r, Bytes(count)};
    MPI_Recv(m.bytes.data(), count, MPI_BYTE, r, kExchangeTag, comm_, MPI_STATUS_IGNORE);
    received.push_back(std::move(m));
  }
  MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
  sort_by_rank(received);
  return received;
}

std::vector<MPI_Request> SparseExchange::start(const std::vector<Buffer>& sends,
                                               const std::vector<Buffer>& receives) const {
  std::vector<MPI_Request> requests(sends.size() + receives.size(), MPI_REQUEST_NULL);
  std::size_t i = 0;
  for (const Buffer& r : receives) {
    if (r.rank == rank_) throw Error("SparseExchange::start: a receive from self");
    MPI_Irecv(r.data, checked_count(r.bytes), MPI_BYTE, r.rank, kStartTag, comm_, &requests[i++]);
  }
  for (const Buffer& s : sends) {
    if (s.rank == rank_) throw Error("SparseExchange::start: a send to self");
    bytes_sent_ += s.bytes;
    MPI_Isend(s.data, checked_count(s.bytes), MPI_BYTE, s.rank, kStartTag, comm_, &requests[i++]);
  }
  return requests;
}

}  // namespace nendo
