/* The least thread stack cplus_demangle(DMGL_NO_RECURSE_LIMIT) needs for
 * the name in argv[1] (a file), by bisection over forked tries (a try that
 * overflows dies of SIGSEGV in its child). bench/demangle_stack.sh. */
#define _GNU_SOURCE
#include <libiberty/demangle.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static const char *g_name; static int g_ok;
static void *run(void *a) { char *d = cplus_demangle(g_name, DMGL_PARAMS|DMGL_ANSI|DMGL_AUTO|DMGL_NO_RECURSE_LIMIT); g_ok = d != NULL; if (d) g_ok = (int)strlen(d); free(d); return a; }
/* 1 ok (prints len), 0 failed demangle, -1 crashed */
static int try_stack(const char *name, size_t st) {
  pid_t p = fork();
  if (!p) { g_name = name; pthread_attr_t at; pthread_attr_init(&at); pthread_attr_setstacksize(&at, st); pthread_attr_setguardsize(&at, 65536);
    pthread_t t; if (pthread_create(&t, &at, run, 0)) _exit(3); pthread_join(t, 0); _exit(g_ok ? 0 : 2); }
  int s; waitpid(p, &s, 0); if (WIFEXITED(s) && WEXITSTATUS(s) == 0) return 1; if (WIFEXITED(s) && WEXITSTATUS(s)==2) return 0; return -1; }
int main(int argc, char **argv) {
  FILE *f = fopen(argv[1], "r"); static char buf[1<<24]; size_t n = fread(buf, 1, sizeof(buf)-1, f); buf[n] = 0; while (n && buf[n-1]=='\n') buf[--n]=0;
  size_t lo = 16384, hi = 1u<<30;
  if (try_stack(buf, hi) != 1) { printf("len %zu: fails even at 1GiB (%d)\n", n, try_stack(buf, hi)); return 0; }
  while (hi - lo > 4096) { size_t mid = (lo+hi)/2; if (try_stack(buf, mid) == 1) hi = mid; else lo = mid; }
  printf("len %zu: needs %zu bytes stack (%.1f B/char)\n", n, hi, (double)hi/n);
}
