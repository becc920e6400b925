// The C++ part of the no-frame-pointer workload (unwind.c): cpp_entry (C linkage)
// calls the template cpp::d<unsigned>, which burns the CPU time asked for, so the
// branch run_shapes -> cpp_entry -> cpp::d<unsigned>() has a mangled C++ frame
// (_ZN3cpp1dIjEEmm) in it. Built -O2 -fomit-frame-pointer (see the Makefile).
#include <cstdint>

#include "burn.h"

namespace cpp {

static volatile std::uint64_t sink;

template <typename T> __attribute__((noipa)) std::uint64_t d(std::uint64_t ns)
{
	std::uint64_t start = burn_thread_ns(), now;

	do {
		for (T i = 0; i < BURN_CHUNK; i++)
			sink = sink + i * 2654435761u;
		now = burn_thread_ns();
	} while (now - start < ns);
	return now - start;
}

template std::uint64_t d<unsigned>(std::uint64_t);

} // namespace cpp

extern "C" __attribute__((noipa)) std::uint64_t cpp_entry(std::uint64_t ns)
{
	return cpp::d<unsigned>(ns) + 0 * cpp::sink;
}
