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
 * use `environ` (execv, execvp, execl, execlp, system, popen) need nothing
 * of this; every exec waits for a snapshot being written and tells a parent waiting
 * for it (below; hooks.c, sf_image_ends).
 *
 * They run in vfork children too, so they take no lock and never call
 * malloc: the new array lives on the stack (or in a fresh mapping when it
 * is large), and the real functions were looked up at start-up. */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <spawn.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
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
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
			char *const[], char *const[]);
static execvpe_fn real_execvpe;
static fexecve_fn real_fexecve;
static execveat_fn real_execveat;
static spawn_fn real_posix_spawn, real_posix_spawnp;
static execv_fn real_execv, real_execvp;

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

/* Start-up, always (init.c): the functions the wrappers call. A wrapper
 * called before that (from an earlier constructor) looks its own up. */
void sf_exec_env_resolve(void)
{
	real_execvpe = (execvpe_fn)dlsym(RTLD_NEXT, "execvpe");
	real_fexecve = (fexecve_fn)dlsym(RTLD_NEXT, "fexecve");
	real_execveat = (execveat_fn)dlsym(RTLD_NEXT, "execveat");
	real_posix_spawn = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawn");
	real_posix_spawnp = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawnp");
	real_execv = (execv_fn)dlsym(RTLD_NEXT, "execv");
	real_execvp = (execv_fn)dlsym(RTLD_NEXT, "execvp");
}

#define REAL(var, type, name) ((var) ? (var) : ((var) = (type)dlsym(RTLD_NEXT, name)))

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
 * else a copy in *mem (unmapped by env_done) or buf. */
struct env_build {
	char **env;
	void *mem;
	size_t mem_len;
};

static char *const *env_for_child(char *const envp[], struct env_build *b, char *buf, size_t cap)
{
	b->env = NULL;
	b->mem = NULL;
	/* After a chroot self_path names whatever sits there in the new
	 * root: it is never preloaded into a child (trust.c). */
	if (!ready || !envp || sf_root_changed())
		return envp;
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
	char *m = buf;
	if (need > cap) {
		m = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return envp;
		b->mem = m;
		b->mem_len = need;
	}
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

#define ENV_BUF 8192
#define EXPORT __attribute__((visibility("default")))

/* Evaluates `call` with `env` bound to the child's environment for envp. */
#define WITH_CHILD_ENV(envp, env, call)                                            \
	({                                                                           \
		char buf_[ENV_BUF];                                                  \
		struct env_build b_;                                                 \
		char *const *env = env_for_child(envp, &b_, buf_, sizeof(buf_));     \
		__typeof__(call) r_ = (call);                                        \
		env_done(&b_);                                                       \
		r_;                                                                  \
	})

/* Every exec first lets a snapshot asked for finish (snapshot.c): the
 * writer thread ends with the old image (sf_image_ends, hooks.c). */
EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	sf_image_ends();
	long r = WITH_CHILD_ENV(envp, env, sf_syscall3(SYS_execve, (long)path, (long)argv, (long)env));
	errno = (int)-r;
	return -1;
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	sf_image_ends();
	if (!REAL(real_execvpe, execvpe_fn, "execvpe"))
		return errno = ENOSYS, -1;
	return WITH_CHILD_ENV(envp, env, real_execvpe(file, argv, env));
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	sf_image_ends();
	if (!REAL(real_fexecve, fexecve_fn, "fexecve"))
		return errno = ENOSYS, -1;
	return WITH_CHILD_ENV(envp, env, real_fexecve(fd, argv, env));
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	sf_image_ends();
	if (!REAL(real_execveat, execveat_fn, "execveat"))
		return errno = ENOSYS, -1;
	return WITH_CHILD_ENV(envp, env, real_execveat(dirfd, path, argv, env, flags));
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
	return execve(path, argv, envp);
}

/* The functions that use `environ` need no environment of their own, but
 * they end the image too: wrapped for sf_image_ends alone. execl and
 * execlp are execv and execvp with the arguments gathered (as glibc does). */
EXPORT int execv(const char *path, char *const argv[])
{
	sf_image_ends();
	if (!REAL(real_execv, execv_fn, "execv"))
		return errno = ENOSYS, -1;
	return real_execv(path, argv);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	sf_image_ends();
	if (!REAL(real_execvp, execv_fn, "execvp"))
		return errno = ENOSYS, -1;
	return real_execvp(file, argv);
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
	return execv(path, argv);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	size_t n;
	COUNT_ARGS(arg, n);
	char *argv[n + 1];
	GATHER_ARGS(arg, argv, n);
	return execvp(file, argv);
}

static int spawn(spawn_fn fn, pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	if (!fn)
		return ENOSYS;
	return WITH_CHILD_ENV(envp, env, fn(pid, path, fa, attr, argv, env));
}

EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return spawn(REAL(real_posix_spawn, spawn_fn, "posix_spawn"), pid, path, fa, attr, argv, envp);
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return spawn(REAL(real_posix_spawnp, spawn_fn, "posix_spawnp"), pid, file, fa, attr, argv, envp);
}
