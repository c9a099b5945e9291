// The program that owns the test programs' precompiled header
// (tests/support/precompiled.h): it is built with their flags, so that
// each of them can reuse the header as g++ made it.
