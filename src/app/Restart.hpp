#pragma once
// `nendo run SCENE --restart latest|FILE`: finding a good checkpoint, checking it against the
// scene, and reading its particles into the method's field layout.
#include <mpi.h>

#include <optional>
#include <string>

#include "decomposition/ParticleSet.hpp"
#include "decomposition/Partition.hpp"
#include "io/Checkpoint.hpp"
#include "methods/Method.hpp"
#include "scene/Scene.hpp"

namespace nendo {

// A restart that cannot go ahead: no checkpoint, a damaged FILE, a scene whose physics differs.
// Raised on every rank alike before any work is done.
class RestartError : public InputError {
 public:
  using InputError::InputError;
};

struct Resumed {
  Checkpoint checkpoint;
  // The partition the run resumes on, when the checkpoint's row index planned it (else the run
  // finds it from the particles, Space::distribute).
  std::optional<Partition> partition;
  // Laid out as make_particles(method) is: with a partition, the particles of this rank's key
  // range (none need to move); without, an equal slice of the file's rows.
  ParticleSet particles{3};
};

// Collective. which: "latest" (the newest good checkpoint in directory; damaged ones are renamed
// *.damaged with a warning and the next older one is tried) or a checkpoint file. The scene must
// have the physics of the checkpoint's (SceneDiff.hpp) unless allow_scene_change; the particles
// must carry every field the method needs.
Resumed load_restart(MPI_Comm comm, const std::string& which, const std::string& directory,
                     const Scene& scene, bool allow_scene_change, const Method& method);

}  // namespace nendo
