// Owns the precompiled header of the tests (support/Precompiled.hpp); nothing to compile.
