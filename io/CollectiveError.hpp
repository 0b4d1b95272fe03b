#pragma once
// Turning one rank's failure into the same nendo::Error on every rank, so that a check made on
// one rank (rank 0 looks at the directory, each rank at its own fields) never leaves the other
// ranks waiting in the next collective call.
#include <mpi.h>

#include <string>

namespace nendo {

// Collective over comm. If local_error is non-empty on any rank, every rank throws nendo::CollectiveError
// with the message of the lowest such rank; otherwise returns on every rank.
void raise_collectively(MPI_Comm comm, const std::string& local_error);

}  // namespace nendo
