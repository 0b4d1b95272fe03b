#pragma once
// What built this nendo, for --version and a run's manifest.json.

namespace nendo {

const char* build_commit();  // `git describe --always --dirty` of the source tree at build time

}  // namespace nendo
