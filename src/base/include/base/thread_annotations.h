// Clang's thread-safety annotations (-Wthread-safety), as macros that vanish for other compilers.
// Lock rules are written on the data and the functions, and the clang build (the sanitizer tree
// of the test command, -Werror=thread-safety) checks every access:
//   int hits_ GUARDED_BY(mu_);            read or written only with mu_ held
//   void FlushLocked() REQUIRES(mu_);     called only with mu_ held
//   void Stop() EXCLUDES(mu_);            called only without it (it takes it)
// base::Mutex and base::MutexLock (mutex.h) are the annotated lock and its scoped holder.
//
// Thread-safety: macros only.
#ifndef MODELMETRICS_BASE_THREAD_ANNOTATIONS_H_
#define MODELMETRICS_BASE_THREAD_ANNOTATIONS_H_

#if defined(__clang__)
#define MM_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define MM_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) MM_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY MM_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) MM_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) MM_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) MM_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) MM_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) MM_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) MM_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) MM_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) MM_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) MM_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define RETURN_CAPABILITY(x) MM_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS MM_THREAD_ANNOTATION(no_thread_safety_analysis)

#endif  // MODELMETRICS_BASE_THREAD_ANNOTATIONS_H_
