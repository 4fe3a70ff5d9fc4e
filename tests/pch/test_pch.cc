// The precompiled headers of the test sources (tests/CMakeLists.txt,
// strata_test_pch): this empty source is what CMake compiles them with.
