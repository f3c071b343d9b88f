/* Children started with an environment of their own stay traced.
 *
 * execve, execvpe, execle, fexecve, execveat, posix_spawn and posix_spawnp
 * take the child's environment from the caller. When it lacks the tracer's
 * variables the child would run untraced, silently. These wrappers pass the
 * given environment on exactly, plus only what is missing of:
 *   - LD_PRELOAD: this runtime's path, and libsftrace-alloc.so's when this
 *     process has it (record --alloc), put first if LD_PRELOAD is given
 *     without them;
 *   - the tracer's SFTRACE_* variables (tracer_vars: every one of
 *     format/sf_env.h) this process started with; other SFTRACE_-prefixed
 *     names are the caller's business.
 * A variable the caller set keeps the caller's value. The functions that
 * use `environ` (execv, execvp, execl, execlp, system, popen) get the
 * same, built from environ: the program may have emptied it (clearenv).
 * environ is the program's again when they return (popen points it at
 * the child's environment while glibc's popen runs only where libc's
 * posix_spawn could not be taken: below). syscall() with the exec numbers comes
 * here too (hooks.c, sf_exec_syscall). Every exec waits for a snapshot
 * being written and tells a parent waiting for it (below; hooks.c,
 * sf_exec_begins).
 *
 * They run in vfork children too, so they take no lock and never call
 * malloc: the new array lives on the stack (or in a fresh mapping when it
 * is large), and the real functions were looked up at start-up. */
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sf_arch.h"
#include "runtime/runtime.h"

#define MAX_VARS 24

static char self_path[4096];        /* this library, as the loader named it */
static char alloc_path[4096];       /* libsftrace-alloc.so, if loaded (record --alloc) */
static char saved[MAX_VARS][8192];  /* SF_ENV(X) "=value" at start */
static int nsaved;
static int ready;

typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);
typedef FILE *(*popen_fn)(const char *, const char *);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
			char *const[], char *const[]);
static execvpe_fn real_execvpe;
static fexecve_fn real_fexecve;
static execveat_fn real_execveat;
static spawn_fn real_posix_spawn, real_posix_spawnp;
static void spawn_compat_resolve(void);
static int sh_dashdash; /* system() runs sh -c -- LINE (glibc >= 2.38) */
static popen_fn real_popen;

static size_t slen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

/* Length of the name in "NAME=value". */
static size_t name_len(const char *kv)
{
	size_t n = 0;
	while (kv[n] && kv[n] != '=')
		n++;
	return n;
}

static int same_name(const char *a, const char *b)
{
	size_t n = name_len(a);
	return n == name_len(b) && !memcmp(a, b, n);
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = slen(s), k = slen(tail);
	return n >= k && !memcmp(s + n - k, tail, k);
}

/* The allocator interposer, as the loader named it (it always sits beside
 * this library: record preloads both). */
static int alloc_find(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	const char *name = info->dlpi_name;
	if (name && ends_with(name, "/libsftrace-alloc.so") && slen(name) < sizeof(alloc_path)) {
		memcpy(alloc_path, name, slen(name) + 1);
		return 1;
	}
	return 0;
}

static int self_find(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t me = (uintptr_t)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && me >= lo && me < lo + ph->p_memsz && info->dlpi_name) {
			size_t n = slen(info->dlpi_name);
			if (n < sizeof(self_path))
				memcpy(self_path, info->dlpi_name, n + 1);
			return 1;
		}
	}
	return 0;
}

extern char **environ;

/* Whether the running glibc (not the one built against) is at least
 * major.minor. */
static int glibc_at_least(int major, int minor)
{
	const char *v = gnu_get_libc_version();
	int ma = 0, mi = 0;
	while (*v >= '0' && *v <= '9')
		ma = ma * 10 + (*v++ - '0');
	if (*v == '.')
		v++;
	while (*v >= '0' && *v <= '9')
		mi = mi * 10 + (*v++ - '0');
	return ma > major || (ma == major && mi >= minor);
}

/* Start-up, always (init.c): the functions the wrappers call. A wrapper
 * called before that (from an earlier constructor) looks its own up. */
void sf_exec_env_resolve(void)
{
	real_execvpe = (execvpe_fn)sf_real("execvpe");
	real_fexecve = (fexecve_fn)sf_real("fexecve");
	real_execveat = (execveat_fn)sf_real("execveat");
	real_posix_spawn = (spawn_fn)sf_real("posix_spawn");
	real_posix_spawnp = (spawn_fn)sf_real("posix_spawnp");
	spawn_compat_resolve();
	sh_dashdash = glibc_at_least(2, 38);
	real_popen = (popen_fn)sf_real("popen");
}

#define REAL(var, type, name) ((var) ? (var) : ((var) = (type)sf_real(name)))

/* Every variable of the contract (format/sf_env.h): a variable added there
 * reaches such children without a change here. */
#define TRACER_VAR(name, meaning) SF_ENV(name),
static const char *const tracer_vars[] = {SF_ENV_LIST(TRACER_VAR)};
#undef TRACER_VAR
_Static_assert(sizeof(tracer_vars) / sizeof(tracer_vars[0]) <= MAX_VARS, "room for every tracer variable");

/* Whether "NAME=value" names one of tracer_vars. */
static int is_tracer_var(const char *e)
{
	for (size_t i = 0; i < sizeof(tracer_vars) / sizeof(tracer_vars[0]); i++) {
		const char *v = tracer_vars[i];
		size_t k = 0;
		while (v[k] && e[k] == v[k]) /* stops at e's NUL too: never reads past it */
			k++;
		if (!v[k] && e[k] == '=')
			return 1;
	}
	return 0;
}

/* Start-up, when tracing (init.c): remember what children need. */
void sf_exec_env_init(void)
{
	dl_iterate_phdr(self_find, (void *)(uintptr_t)sf_exec_env_init);
	dl_iterate_phdr(alloc_find, NULL);
	for (char **e = environ; e && *e && nsaved < MAX_VARS; e++) {
		size_t n = slen(*e);
		if (is_tracer_var(*e) && n < sizeof(saved[0]))
			memcpy(saved[nsaved++], *e, n + 1);
	}
	ready = self_path[0] != 0;
}

/* Whether the colon- or space-separated list holds path. */
static int list_has(const char *list, const char *path)
{
	size_t n = slen(path);
	for (const char *p = list; *p;) {
		size_t k = 0;
		while (p[k] && p[k] != ':' && p[k] != ' ')
			k++;
		if (k == n && !memcmp(p, path, n))
			return 1;
		p += k;
		if (*p)
			p++;
	}
	return 0;
}

/* The environment to give the child: envp itself when it has everything,
 * else a copy in a mapping of its own (b->mem, unmapped by env_done). Never
 * on the caller's stack: exec, system and popen are called from crash
 * handlers on an 8 KiB sigaltstack and from threads with a 16 KiB stack,
 * where glibc's own need little; an 8 KiB buffer there was a SIGSEGV
 * (skeptic24v). */
struct env_build {
	char **env;
	void *mem;
	size_t mem_len;
	size_t len; /* bytes used, from the copy's start */
};

static char *const *env_for_child(char *const envp[], struct env_build *b)
{
	b->env = NULL;
	b->mem = NULL;
	b->len = 0;
	/* After a chroot self_path names whatever sits there in the new
	 * root: it is never preloaded into a child (trust.c). */
	if (!ready || sf_root_changed())
		return envp;
	/* A NULL environment is an empty one to the kernel (execve(path,
	 * argv, NULL)), and what clearenv() leaves in environ. */
	static char *const no_env[] = {NULL};
	if (!envp)
		envp = no_env;
	size_t n = 0, preload_at = (size_t)-1;
	int have[MAX_VARS] = {0}, missing = 0;
	for (; envp[n]; n++) {
		if (!memcmp(envp[n], "LD_PRELOAD=", 11))
			preload_at = n;
		for (int i = 0; i < nsaved; i++)
			if (!have[i] && same_name(envp[n], saved[i]))
				have[i] = 1;
	}
	for (int i = 0; i < nsaved; i++)
		missing += !have[i];
	const char *old = preload_at != (size_t)-1 ? envp[preload_at] + 11 : "";
	int add_self = !list_has(old, self_path);
	int add_alloc = alloc_path[0] && !list_has(old, alloc_path);
	int preload_ok = !add_self && !add_alloc;
	if (!missing && preload_ok)
		return envp;
	size_t old_preload = slen(old);
	size_t ptrs = (n + (size_t)missing + 2) * sizeof(char *);
	size_t need = ptrs + 11 + slen(self_path) + 1 + slen(alloc_path) + 1 + old_preload + 1;
	b->len = need;
	char *m = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return envp;
	b->mem = m;
	b->mem_len = need;
	char **env = (char **)m;
	char *s = m + ptrs;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (i != preload_at || preload_ok)
			env[k++] = envp[i];
	if (!preload_ok) {
		/* LD_PRELOAD=[<self>][:<alloc>][:<theirs>]: what is missing, first */
		env[k++] = s;
		memcpy(s, "LD_PRELOAD=", 11);
		s += 11;
		const char *parts[3] = {add_self ? self_path : "", add_alloc ? alloc_path : "", old};
		int first = 1;
		for (int i = 0; i < 3; i++) {
			size_t pl = slen(parts[i]);
			if (!pl)
				continue;
			if (!first)
				*s++ = ':';
			memcpy(s, parts[i], pl);
			s += pl;
			first = 0;
		}
		*s = 0;
	}
	for (int i = 0; i < nsaved; i++)
		if (!have[i])
			env[k++] = saved[i];
	env[k] = NULL;
	b->env = env;
	return env;
}

/* After a failed exec (a successful one never returns): free the copy,
 * keeping the exec's errno. */
static void env_done(struct env_build *b)
{
	if (b->mem) {
		int e = errno;
		munmap(b->mem, b->mem_len);
		errno = e;
	}
}

#define EXPORT __attribute__((visibility("default")))

/* Evaluates `call` with `env` bound to the child's environment for envp. */
#define WITH_CHILD_ENV(envp, env, call)                                            \
	({                                                                           \
		struct env_build b_;                                                 \
		char *const *env = env_for_child(envp, &b_);                         \
		__typeof__(call) r_ = (call);                                        \
		env_done(&b_);                                                       \
		r_;                                                                  \
	})

/* Every exec first lets a snapshot asked for finish (snapshot.c): the
 * writer thread ends with the old image (sf_exec_begins, hooks.c), and
 * after one that failed sf_exec_failed undoes what must not outlive it. */
/* The system calls execve and execveat (a: their arguments), with the
 * child's environment: execve() and syscall() with either number
 * (hooks.c) come here. Returns -errno. */
long sf_exec_syscall(long nr, const long *a)
{
	int at = nr == SYS_execveat ? 3 : 2; /* where envp is */
	long c[6] = {a[0], a[1], a[2], a[3], a[4], a[5]};
	return WITH_CHILD_ENV((char *const *)a[at], env,
			      (c[at] = (long)env, sf_syscall6(nr, c[0], c[1], c[2], c[3], c[4], c[5])));
}

/* The wrappers call each other through these, never through the
 * exported names: a program with an execve of its own would get those
 * calls (there is no -Bsymbolic). */
static int exec_ve(const char *path, char *const argv[], char *const envp[])
{
	sf_exec_begins();
	long r = sf_exec_syscall(SYS_execve, (const long[6]){(long)path, (long)argv, (long)envp});
	errno = (int)-r;
	sf_exec_failed();
	return -1;
}

static int exec_vpe(const char *file, char *const argv[], char *const envp[])
{
	if (!REAL(real_execvpe, execvpe_fn, "execvpe"))
		return errno = ENOSYS, -1;
	sf_exec_begins();
	int r = WITH_CHILD_ENV(envp, env, real_execvpe(file, argv, env));
	sf_exec_failed();
	return r;
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	return exec_ve(path, argv, envp);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return exec_vpe(file, argv, envp);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	if (!REAL(real_fexecve, fexecve_fn, "fexecve"))
		return errno = ENOSYS, -1;
	sf_exec_begins();
	int r = WITH_CHILD_ENV(envp, env, real_fexecve(fd, argv, env));
	sf_exec_failed();
	return r;
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	if (!REAL(real_execveat, execveat_fn, "execveat"))
		return errno = ENOSYS, -1;
	sf_exec_begins();
	int r = WITH_CHILD_ENV(envp, env, real_execveat(dirfd, path, argv, env, flags));
	sf_exec_failed();
	return r;
}

/* execle(path, arg0, ..., NULL, envp) */
EXPORT int execle(const char *path, const char *arg, ...)
{
	size_t n = 1;
	va_list ap;
	va_start(ap, arg);
	while (va_arg(ap, const char *))
		n++;
	va_end(ap);
	char *argv[n + 1];
	argv[0] = (char *)arg;
	va_start(ap, arg);
	for (size_t i = 1; i <= n; i++)
		argv[i] = va_arg(ap, char *);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return exec_ve(path, argv, envp);
}

/* The functions that use `environ` get the same: the program may have
 * emptied it (clearenv, a daemon sanitizing its environment) or dropped
 * the tracer's variables from it. The child's environment is built from
 * environ plus the runtime's copy taken at start; environ itself stays
 * as the program left it. execv and execvp are execve and execvpe with
 * environ, as in glibc; execl and execlp gather their arguments into
 * them. */
EXPORT int execv(const char *path, char *const argv[])
{
	return exec_ve(path, argv, environ);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	return exec_vpe(file, argv, environ);
}

/* The NULL-ended argument list after arg, counted (without the NULL). */
#define COUNT_ARGS(arg, n)                                   \
	do {                                                 \
		va_list ap_;                                 \
		va_start(ap_, arg);                          \
		for (n = 1; va_arg(ap_, const char *); n++) \
			;                                    \
		va_end(ap_);                                 \
	} while (0)

#define GATHER_ARGS(arg, argv, n)                  \
	do {                                       \
		va_list ap_;                       \
		va_start(ap_, arg);                \
		argv[0] = (char *)arg;             \
		for (size_t i_ = 1; i_ <= n; i_++) \
			argv[i_] = va_arg(ap_, char *); \
		va_end(ap_);                       \
	} while (0)

EXPORT int execl(const char *path, const char *arg, ...)
{
	size_t n;
	COUNT_ARGS(arg, n);
	char *argv[n + 1];
	GATHER_ARGS(arg, argv, n);
	return exec_ve(path, argv, environ);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	size_t n;
	COUNT_ARGS(arg, n);
	char *argv[n + 1];
	GATHER_ARGS(arg, argv, n);
	return exec_vpe(file, argv, environ);
}

static int spawn(spawn_fn fn, pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	if (!fn)
		return ENOSYS;
	return WITH_CHILD_ENV(envp, env, fn(pid, path, fa, attr, argv, env));
}

/* posix_spawn and posix_spawnp carry glibc's versions of them
 * (SF_GLIBC_SPAWN_VERSION, arch/<arch>/sf_arch.h; exports.map), each
 * version going on to libc's of the same version: a program binds to the
 * one it was linked against, as it does untraced. Unversioned, they stood
 * in front of every version, and a program linked against x86-64's first
 * one (posix_spawn@GLIBC_2.2.5, which runs a file without "#!" through
 * /bin/sh) got the default's behaviour: ENOEXEC, the script never ran
 * (skeptic24k). dlsym without a version finds the default one, dlvsym
 * finds the version it names, here first as in libc. */
EXPORT int sf_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			  const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return spawn(REAL(real_posix_spawn, spawn_fn, "posix_spawn"), pid, path, fa, attr, argv, envp);
}
__asm__(".symver sf_posix_spawn, posix_spawn@@" SF_GLIBC_SPAWN_VERSION ", remove");

EXPORT int sf_posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			   const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return spawn(REAL(real_posix_spawnp, spawn_fn, "posix_spawnp"), pid, file, fa, attr, argv, envp);
}
__asm__(".symver sf_posix_spawnp, posix_spawnp@@" SF_GLIBC_SPAWN_VERSION ", remove");

#ifdef SF_GLIBC_SPAWN_COMPAT
/* The first versions (glibc's __posix_spawn_compat: __spawni with
 * SPAWN_XFLAGS_TRY_SHELL): libc's own, found by version. Nothing of
 * libc's is rewritten there: libc itself calls only the default one
 * (popen). */
static spawn_fn real_spawn_compat, real_spawnp_compat;
#define REAL_COMPAT(var, name) \
	((var) ? (var) : ((var) = (spawn_fn)sf_real_v(name, SF_GLIBC_SPAWN_COMPAT)))

EXPORT int sf_posix_spawn_compat(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
				 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return spawn(REAL_COMPAT(real_spawn_compat, "posix_spawn"), pid, path, fa, attr, argv, envp);
}
__asm__(".symver sf_posix_spawn_compat, posix_spawn@" SF_GLIBC_SPAWN_COMPAT ", remove");

EXPORT int sf_posix_spawnp_compat(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
				  const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return spawn(REAL_COMPAT(real_spawnp_compat, "posix_spawnp"), pid, file, fa, attr, argv, envp);
}
__asm__(".symver sf_posix_spawnp_compat, posix_spawnp@" SF_GLIBC_SPAWN_COMPAT ", remove");

static void spawn_compat_resolve(void)
{
	real_spawn_compat = (spawn_fn)sf_real_v("posix_spawn", SF_GLIBC_SPAWN_COMPAT);
	real_spawnp_compat = (spawn_fn)sf_real_v("posix_spawnp", SF_GLIBC_SPAWN_COMPAT);
}
#else
static void spawn_compat_resolve(void)
{
}
#endif

/* system(), glibc's own step by step: glibc's
 * (sysdeps/posix/system.c) spawns its shell with `environ` from inside
 * libc, out of reach, so this one does the same with the child's
 * environment: SIGINT and SIGQUIT ignored while any thread waits in
 * system() (counted), SIGCHLD blocked, the shell spawned with the
 * caller's mask and those two reset to default unless they were ignored,
 * 127 as the shell's exit status when it cannot be spawned, and at a
 * cancellation the child killed and reaped, `sh -c LINE` with "--"
 * before LINE only where the running glibc passes it (2.38). It runs for
 * every call, with environ itself when nothing is missing, and libc's own
 * system jumps here too (sf_exec_env_take_libc), so that all callers
 * share one count, as they share glibc's untraced.
 *
 * glibc's system reaches sigaction, waitpid and posix_spawn inside libc,
 * never through a program's definitions of them: this one calls libc's
 * own, found in libc's symbol table (elf_sym.c). Through their exported
 * names they bound to the executable's (there is no -Bsymbolic), and
 * RTLD_NEXT finds a later preload's. waitpid stays libc's (not the bare
 * wait4): it is the cancellation point glibc's system waits in. The
 * count's lock is a word taken with signals blocked, held for two
 * sigaction calls; the spawn attributes are filled in place, as
 * posix_spawnattr_init and its setters do. */
typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef pid_t (*waitpid_fn)(pid_t, int *, int);
typedef int (*mutex_fn)(pthread_mutex_t *);
static struct {
	sigaction_fn sigaction;
	waitpid_fn waitpid;
	spawn_fn posix_spawn;
	mutex_fn lock, unlock; /* popen's lock (below), the same way */
} own;

/* libc's own definition of name; the next one (sf_real) if libc's table lacks it. */
static void *libc_own(const char *name)
{
	void *p = sf_sym_lib("libc.so", name);
	return p ? p : sf_real(name);
}

static int libc_own_ready(void)
{
	if (!own.waitpid) {
		own.sigaction = (sigaction_fn)libc_own("sigaction");
		own.posix_spawn = (spawn_fn)libc_own("posix_spawn");
		own.lock = (mutex_fn)libc_own("pthread_mutex_lock");
		own.unlock = (mutex_fn)libc_own("pthread_mutex_unlock");
		__atomic_store_n(&own.waitpid, (waitpid_fn)libc_own("waitpid"), __ATOMIC_RELEASE);
	}
	return own.waitpid && own.sigaction && own.posix_spawn && own.lock && own.unlock;
}

static int system_lock;
static int system_users;
static struct sigaction system_intr, system_quit;

static void system_lock_take(sigset_t *old)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, old);
	while (__atomic_test_and_set(&system_lock, __ATOMIC_ACQUIRE))
		sf_arch_cpu_relax();
}

static void system_lock_drop(const sigset_t *old)
{
	__atomic_clear(&system_lock, __ATOMIC_RELEASE);
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

struct system_wait {
	pid_t pid;
	sigset_t omask;
};

static void system_restore(const sigset_t *omask)
{
	sigset_t old;
	system_lock_take(&old);
	if (--system_users == 0) {
		own.sigaction(SIGINT, &system_intr, NULL);
		own.sigaction(SIGQUIT, &system_quit, NULL);
	}
	system_lock_drop(&old);
	sigprocmask(SIG_SETMASK, omask, NULL);
}

static void system_cancelled(void *arg)
{
	struct system_wait *w = arg;
	sf_syscall3(SYS_kill, w->pid, SIGKILL, 0);
	while (own.waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
		;
	system_restore(&w->omask);
}

static int system_in(const char *line, char *const env[])
{
	if (!libc_own_ready())
		return errno = ENOSYS, -1;
	struct sigaction ign = {.sa_handler = SIG_IGN};
	sigemptyset(&ign.sa_mask);
	sigset_t old;
	system_lock_take(&old);
	if (system_users++ == 0) {
		own.sigaction(SIGINT, &ign, &system_intr);
		own.sigaction(SIGQUIT, &ign, &system_quit);
	}
	system_lock_drop(&old);
	struct system_wait w = {.pid = -1};
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &w.omask);
	posix_spawnattr_t attr;
	memset(&attr, 0, sizeof(attr));
	attr.__flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
	attr.__ss = w.omask;
	if (system_intr.sa_handler != SIG_IGN)
		sigaddset(&attr.__sd, SIGINT);
	if (system_quit.sa_handler != SIG_IGN)
		sigaddset(&attr.__sd, SIGQUIT);
	/* glibc passes "--" since 2.38 only: before, a line starting with
	 * '-' is the shell's options, and this one does the same */
	char *argv[] = {"sh", "-c", "--", (char *)line, NULL};
	if (!sh_dashdash)
		argv[2] = (char *)line, argv[3] = NULL;
	int status = -1;
	int ret = own.posix_spawn(&w.pid, "/bin/sh", NULL, &attr, argv, env);
	if (ret == 0) {
		pthread_cleanup_push(system_cancelled, &w);
		pid_t r;
		while ((r = own.waitpid(w.pid, &status, 0)) < 0 && errno == EINTR)
			;
		if (r != w.pid)
			status = -1;
		pthread_cleanup_pop(0);
	} else {
		status = W_EXITCODE(127, 0);
	}
	system_restore(&w.omask);
	if (ret != 0)
		errno = ret;
	return status;
}

/* Always this path, with environ itself when nothing is missing: glibc's
 * system and this one overlapping in two threads kept two counts of the
 * callers, and the second to start saved the SIG_IGN the first had set
 * and put it back last (SIGINT and SIGQUIT ignored for good). */
static int system_all(const char *line)
{
	struct env_build b;
	char *const *env = env_for_child(environ, &b);
	int r = line ? system_in(line, env) : system_in("exit 0", env) == 0;
	env_done(&b);
	return r;
}

EXPORT int system(const char *line)
{
	return system_all(line);
}

/* libc's own system, reached without the PLT (dlsym on a libc handle,
 * another preload's RTLD_NEXT, a RTLD_DEEPBIND library, a plugin loader),
 * jumps to system_all from its first instruction: the two
 * implementations kept a count of callers each, and one that overlapped
 * the other put back the SIG_IGN the other had set (SIGINT ignored for
 * good after a libc system overlapped by this one: skeptic24v). Done once
 * at start-up, before the program runs (init.c), like the loader's hook
 * (loader_hook.c); nothing of glibc's function runs after that. Where the
 * code cannot be rewritten, it says so once and the two counts remain. */
static void take_system(void)
{
	size_t size;
	void *theirs = sf_sym_lib_sized("libc.so", "system", &size);
	if (!theirs)
		return;
	const char *why = sf_arch_redirect(theirs, size, (uint64_t)(uintptr_t)system_all);
	if (why)
		sf_rt_message("libc's system() called directly keeps a count of its own: ", why, NULL);
}

/* glibc's popen spawns its shell through libc's posix_spawn (a direct
 * call inside libc, with `environ`): that entry is made to jump to
 * libc_posix_spawn, which adds what the child's environment lacks and
 * goes on to what posix_spawn itself calls, __spawni(..., 0), found in
 * posix_spawn's code and checked against posix_spawnp's (the same call
 * with 1: glibc 2.15 to this day). environ is never changed: a thread
 * reading it (getenv, a logger walking the array) sees only the
 * program's, at every moment. A program calling libc's posix_spawn
 * without the PLT (dlsym on a libc handle) gets what the exported
 * wrapper gives. Where the code is not that forwarder, popen swaps
 * environ for its call (below). */
typedef int (*spawni_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
			 char *const[], char *const[], int);
static spawni_fn spawni;

static int spawni_plain(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return spawni(pid, path, fa, attr, argv, envp, 0);
}

static int libc_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			    const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return spawn(spawni_plain, pid, path, fa, attr, argv, envp);
}

/* Start-up, before the program runs (init.c, with the system take). */
static void take_posix_spawn(void)
{
	size_t size, psize;
	void *theirs = sf_sym_lib_sized("libc.so", "posix_spawn", &size);
	void *p = sf_sym_lib_sized("libc.so", "posix_spawnp", &psize);
	long flag = -1, pflag = -1;
	uint64_t core = theirs ? sf_arch_forward_target(theirs, size, &flag) : 0;
	const char *why = NULL;
	if (!core || !p || sf_arch_forward_target(p, psize, &pflag) != core || flag != 0 || pflag != 1)
		why = "libc's posix_spawn is not the expected forwarder";
	else if ((why = sf_arch_redirect(theirs, size, (uint64_t)(uintptr_t)libc_posix_spawn)) == NULL) {
		spawni = (spawni_fn)(uintptr_t)core;
		real_posix_spawn = own.posix_spawn = spawni_plain;
	}
	if (why)
		sf_rt_message("popen sets environ while it spawns (other threads may see the tracer's variables): ",
			      why, NULL);
}

/* Start-up, before the program runs (init.c): libc's system and
 * posix_spawn jump to the runtime's. */
void sf_exec_env_take_libc(void)
{
	if (!libc_own_ready())
		return;
	take_system();
	take_posix_spawn();
}

/* popen() is glibc's own, always: only glibc knows the streams its
 * earlier popen calls left open (its private list), and POSIX has each
 * new child close them; a stream a copy of popen opened would be left out
 * of that list too. Its shell gets the tracer's variables where libc's
 * posix_spawn spawns it (libc_posix_spawn, above). Only where that could
 * not be taken: popen reads `environ` when it spawns its shell, so
 * when environ lacks the tracer's variables it is pointed at the child's
 * environment (env_kept) for the duration of glibc's popen and then set
 * back to what the program had.
 *
 * The window: until glibc's popen returns (its shell has exec'd: glibc
 * spawns with CLONE_VFORK), the program's other threads reading environ
 * (getenv) see the tracer's variables as well as their own. A setenv,
 * putenv, unsetenv or clearenv in another thread while popen runs is a
 * race in the program itself (glibc's "const:env"); if it replaced
 * environ, its array is kept. Two threads' popens never overlap
 * (popen_lock), so neither sets environ back under the other. The lock
 * is recursive, as glibc's own popen lock is: a signal handler's popen
 * that interrupted a popen of the same thread goes on (a plain mutex hung
 * it for good). Such a nested call finds environ already complete when
 * the outer one swapped it, and then neither swaps nor restores; when it
 * lands before the swap (or after the restore) it swaps and restores
 * around its own call only, in a buffer of its own (NESTED_SLOT), so the
 * outer call's buffer is never touched under it. A fork made by another
 * thread while the swap is on gets the program's environ back
 * (sf_exec_env_after_fork_child): the thread that would restore it does
 * not exist in the child. system() runs its shell and waits for it inside
 * one call, so the same swap would last the whole command: it spawns with
 * an explicit environment instead (system_in, above); glibc's system does
 * not look at popen's list. */
static pthread_mutex_t popen_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static int popen_depth;       /* popen_lock held: nesting of the owner's calls */
static pthread_t popen_owner; /* popen_lock held: the thread holding it */
static char **swap_old, **swap_now; /* the outermost swap in progress, if any */

void sf_exec_env_after_fork_child(void)
{
	/* held by another thread for two sigaction calls at most (signals
	 * blocked: never by the forking one); that thread is not here */
	__atomic_clear(&system_lock, __ATOMIC_RELAXED);
	/* The forking thread inside popen (a handler's fork) restores its own
	 * swap when that popen returns: only another thread's is undone. */
	if (popen_depth && pthread_equal(popen_owner, pthread_self()))
		return;
	if (swap_now && environ == swap_now)
		environ = swap_old;
	swap_now = swap_old = NULL;
	popen_depth = 0;
	pthread_mutex_t fresh = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	popen_lock = fresh;
}

/* The arrays given to environ: a small ring of mappings, each rewritten in
 * place when the next environment fits and replaced (the old mapping
 * unmapped) only when it does not. The newest is reused as it is while
 * the child's environment stays the same (a program that clears its
 * environment once and then calls popen in a loop rewrites nothing); a
 * per-request variable (a CGI server's REQUEST_ID) cycles through the
 * ring, so memory stays bounded (an array was once mapped per popen and
 * kept for good: +1 page per request).
 *
 * Why a reader that started in an old buffer is done with it when the
 * buffer is used again: another thread sees a buffer only through environ
 * during one popen window, which ends when that popen's shell has exec'd.
 * The buffer comes back into use only RING_SLOTS - 1 popens later, each of
 * which spawned a process and waited for its exec (hundreds of
 * microseconds at least), while the reader (getenv: a scan of a few
 * dozen strings) needs microseconds. That is an argument from time, not a
 * proof: a reader descheduled for longer still reads mapped memory when
 * the buffer was rewritten in place (a later environment, possibly torn
 * mid-rewrite), and only a buffer that had to grow is unmapped. The
 * nested slot serves the popen of a signal handler that interrupted a
 * popen of the same thread (see above). */
#define RING_SLOTS 4
#define NESTED_SLOT RING_SLOTS
struct env_slot {
	char *mem;
	size_t cap;
	int used;
};
static struct env_slot slots[RING_SLOTS + 1];
static int ring_newest = -1;

/* Whether env, built by env_for_child in [lo, lo + len), holds the same
 * entries as kept: the program's strings by address, the built ones
 * (LD_PRELOAD) by content. */
static int same_as_kept(char *const *env, const char *lo, size_t len, char **kept)
{
	size_t i = 0;
	for (; env[i] && kept[i]; i++) {
		int built = env[i] >= lo && env[i] < lo + len;
		if (built ? strcmp(env[i], kept[i]) != 0 : env[i] != kept[i])
			return 0;
	}
	return !env[i] && !kept[i];
}

/* env (built in [lo, lo + len)) copied into slot sl, mapped again when it
 * does not fit; NULL if no memory can be mapped. */
static char **slot_fill(struct env_slot *sl, char *const *env, const char *lo, size_t len)
{
	if (sl->cap < len) {
		size_t cap = (len + 4095) & ~(size_t)4095;
		char *m = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		if (sl->mem)
			munmap(sl->mem, sl->cap);
		sl->mem = m;
		sl->cap = cap;
	}
	/* the strings first, then the pointers, each stored whole */
	char **copy = (char **)sl->mem;
	size_t ptrs = 0;
	while (env[ptrs])
		ptrs++;
	ptrs = (ptrs + 1) * sizeof(char *);
	memcpy(sl->mem + ptrs, lo + ptrs, len - ptrs);
	for (size_t i = 0;; i++) {
		char *e = env[i];
		if (e >= lo && e < lo + len)
			e = sl->mem + (e - lo);
		__atomic_store_n(&copy[i], e, __ATOMIC_RELEASE);
		if (!e)
			break;
	}
	sl->used = 1;
	return copy;
}

/* env (built in [lo, lo + len)) as an array in one of the slots. */
static char **env_kept(char *const *env, const char *lo, size_t len, int nested)
{
	if (nested)
		return slot_fill(&slots[NESTED_SLOT], env, lo, len);
	if (ring_newest >= 0 && same_as_kept(env, lo, len, (char **)slots[ring_newest].mem))
		return (char **)slots[ring_newest].mem;
	int next = (ring_newest + 1) % RING_SLOTS;
	char **r = slot_fill(&slots[next], env, lo, len);
	if (r)
		ring_newest = next;
	return r;
}

static FILE *real_popen_call(const char *cmd, const char *mode)
{
	return REAL(real_popen, popen_fn, "popen") ? real_popen(cmd, mode) : (errno = ENOSYS, NULL);
}

struct popen_swap {
	char **old, **swap;
	int outer; /* the outermost call: it publishes its swap for fork children */
};

/* After glibc's popen, or at a cancellation inside it. */
static void popen_restore(void *arg)
{
	struct popen_swap *w = arg;
	if (w->swap) {
		int e = errno;
		/* a program thread that replaced environ meanwhile keeps its array */
		__atomic_compare_exchange_n(&environ, &w->swap, w->old, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		if (w->outer)
			swap_now = swap_old = NULL;
		errno = e;
	}
	popen_depth--;
	own.unlock(&popen_lock);
}

EXPORT FILE *popen(const char *cmd, const char *mode)
{
	if (spawni) /* the environment is added where it spawns */
		return real_popen_call(cmd, mode);
	if (!libc_own_ready())
		return errno = ENOSYS, NULL;
	own.lock(&popen_lock);
	int nested = popen_depth++ > 0;
	popen_owner = pthread_self();
	char **old = environ;
	struct env_build b;
	char *const *env = env_for_child(old, &b);
	char **swap = NULL;
	if (env != old) { /* never when an outer call swapped: its array is complete */
		swap = env_kept(env, b.mem, b.len, nested);
		if (!swap)
			sf_rt_message("popen: ", "no memory for the child's environment", "this child runs untraced");
	}
	env_done(&b);
	struct popen_swap w = {old, swap, !nested};
	if (swap) {
		if (!nested) {
			swap_old = old;
			swap_now = swap;
		}
		environ = swap;
	}
	FILE *fp;
	pthread_cleanup_push(popen_restore, &w);
	fp = real_popen_call(cmd, mode);
	pthread_cleanup_pop(1);
	return fp;
}
