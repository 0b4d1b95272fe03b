// SparseExchange: byte messages between neighbour ranks. discover() delivers exactly the messages
// that were sent to this rank without knowing their sources in advance (NBX); exchange() does the
// same when the sources are known. Both return messages sorted by source rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "GlobalView.hpp"
#include "decomposition/SparseExchange.hpp"

namespace nendo {
namespace {

using testing::hash;

// A sparse pattern known to every rank: whether `from` sends to `to` in a round, and what.
struct Pattern {
  std::uint64_t seed;
  int density;      // out of 8; 0: nobody sends
  int silent = -1;  // this rank neither sends nor receives

  bool sends(int round, int from, int to) const {
    if (from == silent || to == silent) return false;
    return static_cast<int>(hash(seed, round, from, to) % 8) < density;
  }
  // Payloads are 0 to 60 bytes long, and say who sent them to whom in which round.
  Bytes payload(int round, int from, int to) const {
    const std::uint64_t h = hash(seed, round, to, from + 1000);
    Bytes b;
    const std::size_t n = h % 61;
    for (std::size_t i = 0; i < n; ++i) b.push_back(static_cast<unsigned char>(hash(h, i) & 0xff));
    return b;
  }
  std::map<int, Bytes> outgoing(int round, int me, int ranks) const {
    std::map<int, Bytes> out;
    for (int to = 0; to < ranks; ++to)
      if (sends(round, me, to)) out[to] = payload(round, me, to);
    return out;
  }
  std::vector<Message> expected(int round, int me, int ranks) const {
    std::vector<Message> in;
    for (int from = 0; from < ranks; ++from)
      if (sends(round, from, me)) in.push_back({from, payload(round, from, me)});
    return in;
  }
  std::vector<int> sources(int round, int me, int ranks) const {
    std::vector<int> from;
    for (const Message& m : expected(round, me, ranks)) from.push_back(m.rank);
    return from;
  }
};

// Compares without stopping: a failure on one rank must not skip a collective call on it.
void expect_messages(const std::vector<Message>& got, const std::vector<Message>& want, int round) {
  EXPECT_EQ(got.size(), want.size()) << "round " << round;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    EXPECT_EQ(got[i].rank, want[i].rank) << "round " << round << ", message " << i;
    EXPECT_EQ(got[i].bytes, want[i].bytes) << "round " << round << ", message from " << got[i].rank;
  }
}

// Different patterns: dense, sparse, nobody at all, and with one rank left out entirely.
std::vector<Pattern> patterns(int ranks) {
  std::vector<Pattern> p{{11, 8}, {12, 4}, {13, 2}, {14, 1}, {15, 0}};
  p.push_back({16, 5, ranks - 1});
  p.push_back({17, 8, 0});
  return p;
}

TEST(SparseExchange, DiscoverDeliversExactlyTheMessagesSentSortedBySource) {
  const int me = mpi::rank(MPI_COMM_WORLD), ranks = mpi::size(MPI_COMM_WORLD);
  SparseExchange exchange(MPI_COMM_WORLD);
  EXPECT_EQ(exchange.rank(), me);
  int round = 0;
  for (const Pattern& pattern : patterns(ranks))
    for (int repeat = 0; repeat < 6; ++repeat, ++round) {
      const auto got = exchange.discover(pattern.outgoing(round, me, ranks));
      expect_messages(got, pattern.expected(round, me, ranks), round);
    }
}

TEST(SparseExchange, SilentRankReceivesNothing) {
  const int me = mpi::rank(MPI_COMM_WORLD), ranks = mpi::size(MPI_COMM_WORLD);
  SparseExchange exchange(MPI_COMM_WORLD);
  const int silent = ranks - 1;
  // Everybody else sends to everybody else, including itself; the silent rank sends nothing.
  std::map<int, Bytes> out;
  if (me != silent)
    for (int to = 0; to < ranks; ++to)
      if (to != silent) out[to] = Bytes{static_cast<unsigned char>(me), static_cast<unsigned char>(to)};
  const auto got = exchange.discover(out);
  if (me == silent) {
    EXPECT_TRUE(got.empty()) << "the silent rank received " << got.size() << " messages";
  } else {
    ASSERT_EQ(got.size(), static_cast<std::size_t>(ranks - 1));
    for (int from = 0; from < ranks - 1; ++from) {
      EXPECT_EQ(got[from].rank, from);
      EXPECT_EQ(got[from].bytes, (Bytes{static_cast<unsigned char>(from), static_cast<unsigned char>(me)}));
    }
  }
}

// A message to self is delivered without MPI and is not counted as sent.
TEST(SparseExchange, BytesSentCountsOnlyOtherRanks) {
  const int me = mpi::rank(MPI_COMM_WORLD), ranks = mpi::size(MPI_COMM_WORLD);
  SparseExchange exchange(MPI_COMM_WORLD);
  std::map<int, Bytes> out;
  for (int to = 0; to < ranks; ++to) out[to] = Bytes(10 + to);
  const auto got = exchange.discover(out);
  EXPECT_EQ(got.size(), static_cast<std::size_t>(ranks));
  std::size_t expected = 0;
  for (int to = 0; to < ranks; ++to) expected += to == me ? 0 : 10 + to;
  EXPECT_EQ(exchange.bytes_sent(), expected);
  exchange.reset_counters();
  EXPECT_EQ(exchange.bytes_sent(), 0u);
}

// Regression for the NBX round-mixing hazard: a rank that has left discover() may send the next
// round's messages while a slower rank still probes for this round's. Many rounds back to back,
// with ranks made unequally slow, must each deliver exactly their own messages.
TEST(SparseExchange, ConsecutiveDiscoverRoundsNeverMix) {
  const int me = mpi::rank(MPI_COMM_WORLD), ranks = mpi::size(MPI_COMM_WORLD);
  SparseExchange exchange(MPI_COMM_WORLD);
  const Pattern pattern{21, 3};
  for (int round = 0; round < 400; ++round) {
    // Some ranks dawdle before joining (up to 0.2 ms), others race ahead.
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::microseconds(hash(99, round, me) % 200);
    if (hash(98, round, me) % 2 == 0)
      while (std::chrono::steady_clock::now() < until) {
      }
    const auto got = exchange.discover(pattern.outgoing(round, me, ranks));
    expect_messages(got, pattern.expected(round, me, ranks), round);
  }
}

// Two exchanges on one communicator (as when migration and ghost exchange run back to back) each
// own a duplicate of it, so their rounds cannot take each other's messages.
TEST(SparseExchange, TwoExchangesOnOneCommunicatorStaySeparate) {
  const int me = mpi::rank(MPI_COMM_WORLD), ranks = mpi::size(MPI_COMM_WORLD);
  SparseExchange first(MPI_COMM_WORLD), second(MPI_COMM_WORLD);
  const Pattern a{31, 4}, b{32, 4};
  for (int round = 0; round < 60; ++round) {
    const auto got_a = first.discover(a.outgoing(round, me, ranks));
    const auto got_b = second.discover(b.outgoing(round, me, ranks));
    expect_messages(got_a, a.expected(round, me, ranks), round);
    expect_messages(got_b, b.expected(round, me, ranks), round);
  }
}

TEST(SparseExchange, ExchangeWithKnownPartnersDeliversTheSameAsDiscover) {
  const int me = mpi::rank(MPI_COMM_WORLD), ranks = mpi::size(MPI_COMM_WORLD);
  SparseExchange exchange(MPI_COMM_WORLD);
  int round = 0;
  for (const Pattern& pattern : patterns(ranks))
    for (int repeat = 0; repeat < 6; ++repeat, ++round) {
      const auto got =
          exchange.exchange(pattern.outgoing(round, me, ranks), pattern.sources(round, me, ranks));
      expect_messages(got, pattern.expected(round, me, ranks), round);
    }
}

// exchange() and discover() interleaved on one object, as a plan built by discover() is then used.
TEST(SparseExchange, InterleavedExchangeAndDiscoverRounds) {
  const int me = mpi::rank(MPI_COMM_WORLD), ranks = mpi::size(MPI_COMM_WORLD);
  SparseExchange exchange(MPI_COMM_WORLD);
  const Pattern pattern{41, 5, ranks > 1 ? 1 : -1};
  for (int round = 0; round < 150; ++round) {
    const auto out = pattern.outgoing(round, me, ranks);
    const auto got =
        round % 3 == 0 ? exchange.discover(out) : exchange.exchange(out, pattern.sources(round, me, ranks));
    expect_messages(got, pattern.expected(round, me, ranks), round);
  }
}

// Known partners in a ring, with empty messages: both directions arrive, sorted by source.
TEST(SparseExchange, ExchangeAroundARingWithEmptyMessages) {
  const int me = mpi::rank(MPI_COMM_WORLD), ranks = mpi::size(MPI_COMM_WORLD);
  SparseExchange exchange(MPI_COMM_WORLD);
  const int next = (me + 1) % ranks, previous = (me + ranks - 1) % ranks;
  std::map<int, Bytes> out;
  out[next] = Bytes{1, static_cast<unsigned char>(me)};
  out[previous] = Bytes{};  // with 1 or 2 ranks this replaces the message to `next`
  std::vector<int> from{previous, next};
  std::sort(from.begin(), from.end());
  from.erase(std::unique(from.begin(), from.end()), from.end());
  const auto got = exchange.exchange(out, from);
  ASSERT_EQ(got.size(), from.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].rank, from[i]);
    // From `previous` (whose next is me) the 2-byte message, from `next` the empty one.
    const bool from_previous_only = got[i].rank == previous && (ranks > 2);
    if (from_previous_only) {
      EXPECT_EQ(got[i].bytes, (Bytes{1, static_cast<unsigned char>(previous)}));
    }
    if (got[i].rank == next) {
      EXPECT_TRUE(got[i].bytes.empty());
    }
  }
}

TEST(ByteReader, ReadsBackWhatPutWroteAndRefusesToReadPastTheEnd) {
  Bytes b;
  put(b, std::uint64_t{0x0123456789abcdefULL});
  put(b, std::int32_t{-7});
  put(b, 2.5);
  EXPECT_EQ(b.size(), 20u);
  ByteReader in(b);
  EXPECT_EQ(in.get<std::uint64_t>(), 0x0123456789abcdefULL);
  EXPECT_EQ(in.get<std::int32_t>(), -7);
  EXPECT_FALSE(in.done());
  EXPECT_EQ(in.get<double>(), 2.5);
  EXPECT_TRUE(in.done());
  EXPECT_THROW(in.get<std::int32_t>(), Error);
}

}  // namespace
}  // namespace nendo
