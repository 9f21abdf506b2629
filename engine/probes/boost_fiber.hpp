// Boost.Fiber for the probes that use it (create.fiber, uswitch.boost_fiber),
// when it was found (CTXBENCH_HAVE_BOOST_FIBER).
#pragma once

#if CTXBENCH_HAVE_BOOST_FIBER
#include <boost/fiber/all.hpp>
// Boost.Fiber defines a function-like macro cpu_relax() for its spinlocks,
// already expanded in its own headers; left defined, it would rewrite
// ctx::arch::cpu_relax() in the probe files after these in a unity batch.
#undef cpu_relax
#endif
