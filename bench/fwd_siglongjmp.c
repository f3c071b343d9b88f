/* The least interposer of siglongjmp there is: found by dlsym(RTLD_NEXT)
 * once, at load, and called. bench/first_landing.py preloads it to show
 * what any interposed siglongjmp costs a thread's first landing, cold
 * cache and all, beside the runtime's.
 * cc -O2 -fPIC -shared -o fwd_siglongjmp.so bench/fwd_siglongjmp.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>

typedef void (*longjmp_fn)(struct __jmp_buf_tag *, int) __attribute__((noreturn));
static longjmp_fn real;

__attribute__((constructor)) static void find(void)
{
	real = (longjmp_fn)dlsym(RTLD_NEXT, "siglongjmp");
}

__attribute__((noreturn)) void siglongjmp(sigjmp_buf env, int val)
{
	real(env, val);
}
