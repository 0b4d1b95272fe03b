#pragma once
// Small text files (the XDMF series, the diagnostics CSV) written whole or not at all.
#include <string>

namespace nendo {

// Writes text to path.tmp, then renames it over path: a reader sees the old file or the new one,
// never a part. On failure (a full disk, a read-only directory) throws nendo::Error naming the
// file, removes the temporary and leaves path as it was.
void replace_text_file(const std::string& path, const std::string& text);

}  // namespace nendo
