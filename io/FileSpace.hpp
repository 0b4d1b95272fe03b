#pragma once
// Room on the file system for a file about to be written. A collective parallel HDF5 write that
// meets a full disk on one rank can leave the others waiting in H5Fclose (Open MPI's OMPIO): the
// writer therefore takes the file's whole size from the file system before the first byte of data,
// so that no later write can run out of space.
#include <cstdint>
#include <functional>
#include <string>

namespace nendo {

// The bytes the file system holding `directory` has free for this process (the largest value when
// it cannot tell).
std::uint64_t free_bytes(const std::string& directory);

// "not enough space for NAME: it needs N KiB, M KiB are free (No space left on device)".
std::string not_enough_space(const std::string& name, std::uint64_t needed, std::uint64_t free);

// Allocates the first `bytes` bytes of the existing file at path on the disk (fallocate; the file
// grows to that size if it is smaller), so that writes within them need no new space. Returns ""
// when done, or when the file system cannot preallocate (nothing is reserved then); else a message
// naming `name` (the file the user knows), the bytes needed and the bytes free.
std::string reserve_file_space(const std::string& path, std::uint64_t bytes, const std::string& name);

// Makes the file at path with `create` (which throws nendo::Error when it fails), then reserves its
// first `bytes` bytes (reserve_file_space). Something else can fill the file system between a space
// check and the file's first bytes: a creation that fails while fewer than `bytes` are free is
// reported like a reservation the disk cannot hold. Returns "" or the message.
std::string create_with_space(const std::string& path, std::uint64_t bytes, const std::string& name,
                              const std::function<void()>& create);

}  // namespace nendo
