// The one main() for every Catch2 test executable.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
