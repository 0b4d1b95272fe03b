#pragma once
// `nendo run SCENE --restart latest|FILE`: finding a good checkpoint, checking it against the
// scene, and reading its particles into the method's field layout.
#include <mpi.h>

#include <string>

#include "decomposition/ParticleSet.hpp"
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
  ParticleSet particles{3};  // this rank's contiguous chunk, laid out as make_particles(method) is
};

// Collective. which: "latest" (the newest good checkpoint in directory; damaged ones are renamed
// *.damaged with a warning and the next older one is tried) or a checkpoint file. The scene must
// have the physics of the checkpoint's (SceneDiff.hpp) unless allow_scene_change; the particles
// must carry every field the method needs.
Resumed load_restart(MPI_Comm comm, const std::string& which, const std::string& directory,
                     const Scene& scene, bool allow_scene_change, const Method& method);

}  // namespace nendo
