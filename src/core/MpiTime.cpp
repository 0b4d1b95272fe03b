#include "core/MpiTime.hpp"

#include <mpi.h>

// The MPI profiling interface (MPI standard §14.2): a program may define MPI_X itself and reach
// the library's implementation as PMPI_X. Each definition below adds its call's wall time.

namespace nendo::mpi_time {
namespace {
double inside = 0;  // seconds in the calls below on this rank (MPI processes are single-threaded here)

Traffic sent;  // this rank's, since MPI_Init

template <class Call>
int timed(Call&& call) {
  const double start = PMPI_Wtime();
  const int code = call();
  inside += PMPI_Wtime() - start;
  return code;
}
void count_message(int count, MPI_Datatype type) {
  int size = 0;
  PMPI_Type_size(type, &size);
  ++sent.messages;
  sent.bytes += static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(size);
}

template <class Call>
int collective(Call&& call) {
  ++sent.collectives;
  return timed(call);
}
}  // namespace

double seconds() { return inside; }
Traffic traffic() { return sent; }

}  // namespace nendo::mpi_time

using nendo::mpi_time::collective;
using nendo::mpi_time::count_message;
using nendo::mpi_time::timed;

extern "C" {

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  return timed([&] { return PMPI_Wait(request, status); });
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  return timed([&] { return PMPI_Waitall(count, requests, statuses); });
}

int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  return timed([&] { return PMPI_Waitany(count, requests, index, status); });
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  return timed([&] { return PMPI_Waitsome(incount, requests, outcount, indices, statuses); });
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  return timed([&] { return PMPI_Test(request, flag, status); });
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  return timed([&] { return PMPI_Testall(count, requests, flag, statuses); });
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  return timed([&] { return PMPI_Probe(source, tag, comm, status); });
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  return timed([&] { return PMPI_Iprobe(source, tag, comm, flag, status); });
}

int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status* status) {
  return timed([&] { return PMPI_Recv(buf, count, type, source, tag, comm, status); });
}

int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  count_message(count, type);
  return timed([&] { return PMPI_Send(buf, count, type, dest, tag, comm); });
}

int MPI_Ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  count_message(count, type);
  return timed([&] { return PMPI_Ssend(buf, count, type, dest, tag, comm); });
}

int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                 MPI_Status* status) {
  count_message(sendcount, sendtype);
  return timed([&] {
    return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                         recvtag, comm, status);
  });
}

int MPI_Barrier(MPI_Comm comm) {
  return collective([&] { return PMPI_Barrier(comm); });
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  return collective([&] { return PMPI_Bcast(buffer, count, type, root, comm); });
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm) {
  return collective([&] { return PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm); });
}

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  return collective([&] { return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm); });
}

int MPI_Scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  return collective([&] { return PMPI_Scan(sendbuf, recvbuf, count, type, op, comm); });
}

int MPI_Exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  return collective([&] { return PMPI_Exscan(sendbuf, recvbuf, count, type, op, comm); });
}

int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return collective(
      [&] { return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm); });
}

int MPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return collective([&] {
    return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
  });
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  return collective(
      [&] { return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); });
}

int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  return collective([&] {
    return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
  });
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
  return collective(
      [&] { return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); });
}

int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                  MPI_Comm comm) {
  return collective([&] {
    return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                          comm);
  });
}

// Non-blocking: counted, not timed (the wait is, in MPI_Wait*/MPI_Test*).
int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request) {
  count_message(count, type);
  return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}

int MPI_Issend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request) {
  count_message(count, type);
  return PMPI_Issend(buf, count, type, dest, tag, comm, request);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request* request) {
  ++nendo::mpi_time::sent.collectives;
  return PMPI_Ibarrier(comm, request);
}

int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                   MPI_Request* request) {
  ++nendo::mpi_time::sent.collectives;
  return PMPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, request);
}

}  // extern "C"
