/* Function selection at patch time.
 *
 * With a filter file (sftrace record -f / SFTRACE_FILTER) the file is parsed
 * once at start into mmap'd tables; objects are matched by build-id (or path
 * when the object has none). Without one every function is patched.
 *
 * With record --filter-regex (SFTRACE_FILTER_REGEX) the filter is made per
 * object, when an object with sleds loads: its file in the recording's
 * filter directory (SFTRACE_FILTER_DIR, one file per build-id) is loaded,
 * and if it does not exist yet the runtime runs `sftrace filter` for that
 * object (SFTRACE_CLI) to write it. The child gets the environment the
 * program started with (less LD_PRELOAD, LD_AUDIT and SFTRACE_*), default
 * signals and no descriptor but 0-2, and is never run after a chroot; it
 * runs under an intermediate child with exit
 * signal 0 (the program sees no SIGCHLD and its wait() cannot reap it),
 * which is waited for. Processes
 * share the directory; sftrace filter writes a temporary file and renames
 * it, so a concurrent reader sees no file or a whole one. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format/filter_file.h"
#include "sf_arch.h"
#include "runtime/runtime.h"

#define MAX_FILTER_OBJECTS 1024
#define SPAWN_STACK (64 * 1024)

extern char **environ;

struct filter_object {
	const char *path;
	uint8_t build_id[64];
	int build_id_len;
	uint64_t *funcs; /* sorted */
	size_t nfuncs;
};

static struct {
	int loaded;
	int per_object; /* --filter-regex: one file per object, made on demand */
	int mode;       /* enum ff_mode */
	int unlisted;   /* enum ff_unlisted */
	struct filter_object objs[MAX_FILTER_OBJECTS];
	size_t nobjs;
	uint64_t *funcs; /* the file being loaded */
	size_t nfuncs, cap;
	char regex[4096], dir[4096], cli[4096];
} F;

static size_t slen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

static int copy_env(const char *name, char *out, size_t cap)
{
	const char *v = getenv(name);
	if (!v || !v[0] || slen(v) >= cap)
		return -1;
	memcpy(out, v, slen(v) + 1);
	return 0;
}

static int on_setting(void *ctx, const char *key, const char *value)
{
	(void)ctx;
	if (F.per_object)
		return 0; /* the recording's options decide, not each file */
	if (!strcmp(key, "mode"))
		F.mode = !strcmp(value, "within") ? FF_MODE_WITHIN : FF_MODE_SELECT;
	else
		F.unlisted = !strcmp(value, "trace") ? FF_UNLISTED_TRACE : FF_UNLISTED_SKIP;
	return 0;
}

static int on_object(void *ctx, const char *bid, const char *path)
{
	(void)ctx;
	if (F.nobjs == MAX_FILTER_OBJECTS)
		return -1;
	struct filter_object *o = &F.objs[F.nobjs++];
	o->path = path;
	o->build_id_len = ff_build_id_from_hex(bid, o->build_id, sizeof(o->build_id));
	o->funcs = F.funcs + F.nfuncs;
	o->nfuncs = 0;
	return 0;
}

static int on_func(void *ctx, uint64_t vaddr, const char *name)
{
	(void)ctx;
	(void)name;
	if (F.nfuncs == F.cap)
		return -1;
	F.funcs[F.nfuncs++] = vaddr;
	F.objs[F.nobjs - 1].nfuncs++;
	return 0;
}

static void sort_u64(uint64_t *v, size_t n)
{
	/* Shell sort: no recursion, no allocation, fine for filter sizes. */
	for (size_t gap = n / 2; gap; gap /= 2)
		for (size_t i = gap; i < n; i++)
			for (size_t j = i; j >= gap && v[j - gap] > v[j]; j -= gap) {
				uint64_t t = v[j];
				v[j] = v[j - gap];
				v[j - gap] = t;
			}
}

/* Adds the objects of one filter file to the tables. The text stays
 * mapped: object paths point into it. */
static int load_file(const char *path, int private_dir)
{
	/* A file record wrote (--filter-regex's per-object filters) is
	 * checked for owner and mode as well; the user's own -f file only for
	 * type. Never a symlink, never a FIFO (trust.c). */
	const char *why = NULL;
	size_t len = 0, map_len = 0;
	char *text = sf_trust_load(path, private_dir, 1, &len, &map_len, &why);
	if (!text) {
		sf_rt_message("cannot read filter ", path, why);
		return -1;
	}
	size_t lines = 1;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	F.cap = lines;
	F.nfuncs = 0;
	F.funcs = sf_map_anon(lines * sizeof(uint64_t));
	if (!F.funcs)
		return -1;
	size_t first = F.nobjs;
	struct ff_handler h = {on_setting, on_object, on_func};
	char err[256];
	if (ff_parse(text, len, &h, NULL, err, sizeof(err)) < 0) {
		F.nobjs = first;
		sf_rt_message("bad filter ", path, err);
		return -1;
	}
	for (size_t i = first; i < F.nobjs; i++)
		sort_u64(F.objs[i].funcs, F.objs[i].nfuncs);
	return 0;
}

static void save_start_env(void);

/* A filter record made (a merge of several -f) lies in its private
 * directory and is checked as such; the user's own file only for type. */
static int in_private_dir(const char *path)
{
	const char *dir = getenv(SF_ENV(NOTES_DIR));
	size_t n = dir ? slen(dir) : 0;
	return n && !strncmp(path, dir, n) && path[n] == '/';
}

int sf_filter_init(void)
{
	if (sf_config.filter[0]) {
		if (load_file(sf_config.filter, in_private_dir(sf_config.filter)) < 0)
			return -1;
		F.loaded = 1;
		return 0;
	}
	const char *re = getenv(SF_ENV(FILTER_REGEX));
	if (!re || !re[0])
		return 0;
	if (copy_env(SF_ENV(FILTER_REGEX), F.regex, sizeof(F.regex)) < 0 ||
	    copy_env(SF_ENV(FILTER_DIR), F.dir, sizeof(F.dir) - 256) < 0 ||
	    copy_env(SF_ENV(CLI), F.cli, sizeof(F.cli)) < 0 || F.dir[0] != '/' || F.cli[0] != '/') {
		sf_rt_message(SF_ENV(FILTER_REGEX) " needs absolute " SF_ENV(FILTER_DIR) " and " SF_ENV(CLI) " paths", "",
			      NULL);
		return -1;
	}
	const char *within = getenv(SF_ENV(FILTER_WITHIN));
	F.mode = within && within[0] == '1' ? FF_MODE_WITHIN : FF_MODE_SELECT;
	F.unlisted = FF_UNLISTED_SKIP; /* an object whose filter could not be made */
	F.per_object = 1;
	F.loaded = 1;
	save_start_env();
	return 0;
}

/* Copies s into out[*n..cap), NUL-terminated, cut if it does not fit. */
static void put_str(char *out, size_t cap, size_t *n, const char *s)
{
	while (*s && *n + 1 < cap)
		out[(*n)++] = *s++;
	out[*n] = 0;
}

void sf_filter_describe(char *out, size_t cap)
{
	size_t n = 0;
	out[0] = 0;
	if (sf_config.filter[0] && in_private_dir(sf_config.filter)) {
		put_str(out, cap, &n, "-f (several files, merged by record)");
	} else if (sf_config.filter[0]) {
		put_str(out, cap, &n, "-f ");
		put_str(out, cap, &n, sf_config.filter);
	} else if (F.per_object) {
		put_str(out, cap, &n, "--filter-regex ");
		put_str(out, cap, &n, F.regex);
		if (F.mode == FF_MODE_WITHIN)
			put_str(out, cap, &n, " --within");
	}
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* The filter's entry for obj: same build-id, or same path when either has
 * no build-id. *mismatch is set when the path matches but the build-id
 * does not. */
static struct filter_object *find(const struct sf_object_rt *obj, int *mismatch)
{
	*mismatch = 0;
	for (size_t i = 0; i < F.nobjs; i++) {
		struct filter_object *f = &F.objs[i];
		int both = f->build_id_len > 0 && obj->info.build_id_len > 0;
		if (both && f->build_id_len == obj->info.build_id_len &&
		    !memcmp(f->build_id, obj->info.build_id, (size_t)f->build_id_len))
			return f;
		if (!strcmp(f->path, obj->path) || !strcmp(base_name(f->path), base_name(obj->path))) {
			if (!both)
				return f;
			*mismatch = 1;
		}
	}
	return NULL;
}

/* DIR/<name>.filter for the object. */
static int cache_path(const char *path, const uint8_t *bid, size_t bid_len, char *out, size_t cap)
{
	size_t d = slen(F.dir);
	if (d + 2 >= cap)
		return -1;
	memcpy(out, F.dir, d);
	out[d] = '/';
	return ff_cache_name(bid, bid_len, path, out + d + 1, cap - d - 1);
}

struct spawn_args {
	const char *file;
	char *const *argv;
	char *const *envp;
	char *exec_stack; /* top of the second half of the stack mapping */
};

/* A disposition set with the raw system call (the kernel's layout: no
 * restorer is needed for SIG_DFL): only this child's signal table
 * changes, the program's stays as it is (no CLONE_SIGHAND). */
struct k_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

static void set_default(int sig)
{
	struct k_sigaction sa = {0};
	sf_syscall6(SYS_rt_sigaction, sig, (long)&sa, 0, sizeof(sa.mask), 0, 0);
}

/* What sftrace filter starts with, whatever the program did: every
 * signal at its default and unblocked, no descriptor but 0, 1 and 2. */
static void reset_for_exec(void)
{
	for (int sig = 1; sig <= 64; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			set_default(sig);
	if (sf_syscall3(SYS_close_range, 3, ~0u, 0) < 0)
		for (int fd = 3; fd < 65536; fd++)
			sf_syscall3(SYS_close, fd, 0, 0);
	uint64_t none = 0;
	sf_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&none, 0, sizeof(none), 0, 0);
}

/* The children run on their own stacks but in our memory (CLONE_VM, the
 * parent suspended meanwhile): raw system calls only, nothing that touches
 * TLS. */
static int exec_child(void *arg)
{
	const struct spawn_args *a = arg;
	reset_for_exec();
	sf_syscall3(SYS_execve, (long)a->file, (long)a->argv, (long)a->envp);
	sf_syscall3(SYS_exit, 127, 0, 0);
	return 127;
}

/* exec resets a process's exit signal to SIGCHLD, so the program would
 * see the exec'd child end. This intermediate child, never exec'd, keeps
 * exit signal 0: it runs sftrace filter as its own child, waits for it and
 * exits with its status. Its SIGCHLD is set to the default first: one
 * the program ignores (SIG_IGN, SA_NOCLDWAIT) would have the kernel reap
 * the child before the wait could read its status. */
static int waiter_child(void *arg)
{
	struct spawn_args *a = arg;
	set_default(SIGCHLD);
	int pid = sf_clone_real(exec_child, a->exec_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, a);
	int status = 127 << 8;
	if (pid > 0) {
		long r;
		do
			r = sf_syscall6(SYS_wait4, pid, (long)&status, 0, 0, 0, 0);
		while (r == -EINTR);
	}
	sf_syscall3(SYS_exit, WIFEXITED(status) ? WEXITSTATUS(status) : 126, 0, 0);
	return 126;
}

/* The child's environment is the one the program started with, taken at
 * start-up: what the program sets later (LD_LIBRARY_PATH, LD_AUDIT, PATH)
 * never reaches sftrace filter. Left out: LD_PRELOAD, LD_AUDIT and every
 * other loader variable but LD_LIBRARY_PATH (the user's, as the CLI ran
 * with it: record adds nothing to it), and SFTRACE_*. */
static int env_kept(const char *e)
{
	if (!strncmp(e, SF_ENV_PREFIX, sizeof(SF_ENV_PREFIX) - 1))
		return 0;
	return strncmp(e, "LD_", 3) || !strncmp(e, "LD_LIBRARY_PATH=", 16);
}

static char **start_env;

static void save_start_env(void)
{
	size_t n = 0, bytes = 0;
	for (char **e = environ; e && *e; e++)
		if (env_kept(*e)) {
			n++;
			bytes += slen(*e) + 1;
		}
	char **env = sf_map_anon((n + 1) * sizeof(char *) + bytes);
	if (!env)
		return;
	char *s = (char *)(env + n + 1);
	size_t k = 0;
	for (char **e = environ; e && *e && k < n; e++)
		if (env_kept(*e)) {
			size_t l = slen(*e) + 1;
			memcpy(s, *e, l);
			env[k++] = s;
			s += l;
		}
	env[k] = NULL;
	start_env = env;
}

#define MAX_CLI_ARGS 15

int sf_cli_enable(void)
{
	if (!F.cli[0] && (copy_env(SF_ENV(CLI), F.cli, sizeof(F.cli)) < 0 || F.cli[0] != '/')) {
		F.cli[0] = 0;
		return -1;
	}
	if (!start_env)
		save_start_env();
	return 0;
}

int sf_cli_run(const char *const *args)
{
	char *argv[MAX_CLI_ARGS + 2] = {F.cli};
	for (int i = 0; args[i]; i++) {
		if (i == MAX_CLI_ARGS)
			return -1;
		argv[i + 1] = (char *)args[i];
	}
	char *stack = sf_map_anon(SPAWN_STACK);
	int rc = -1;
	if (!stack || !start_env || !F.cli[0])
		goto out;
	struct spawn_args a = {F.cli, argv, start_env, stack + SPAWN_STACK};
	/* Every signal blocked until the exec: the child shares our memory,
	 * and a program's handler must never run in it. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int saved_errno = errno;
	int pid = sf_clone_real(waiter_child, stack + SPAWN_STACK / 2, CLONE_VM | CLONE_VFORK, &a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid > 0) {
		int status = 0;
		long r;
		do
			r = sf_syscall6(SYS_wait4, pid, (long)&status, __WALL, 0, 0, 0);
		while (r == -EINTR);
		rc = r == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
	}
	errno = saved_errno;
out:
	if (stack)
		munmap(stack, SPAWN_STACK);
	return rc;
}

/* `sftrace filter -q --allow-empty -p OBJ -r RE [--within] -o OUT`; 0 when
 * it exited 0. */
static int run_filter_cli(const char *obj_path, const char *out)
{
	const char *args[] = {"filter", "-q", "--allow-empty", "-p", obj_path, "-r", F.regex, "-o", out,
			      F.mode == FF_MODE_WITHIN ? "--within" : NULL, NULL};
	return sf_cli_run(args);
}

int sf_filter_per_object(void)
{
	return F.per_object;
}

void sf_filter_prepare_object(const char *path, const uint8_t *bid, size_t bid_len)
{
	if (!F.per_object)
		return;
	char file[4096];
	/* the cache's access() is one of the calls sandbox.c checks (cli_path):
	 * where a seccomp filter refuses any, not even a cached filter is looked for */
	int refused = __atomic_load_n(&sf_sandbox_no_cli, __ATOMIC_ACQUIRE) ||
		      __atomic_load_n(&sf_sandbox_stopped, __ATOMIC_ACQUIRE);
	if (!refused && (cache_path(path, bid, bid_len, file, sizeof(file)) < 0 || access(file, F_OK) == 0))
		return;
	/* After a chroot SFTRACE_CLI names whatever sits at that path in the
	 * new root: nothing is run there. */
	if (sf_root_changed()) {
		sf_rt_message("not running sftrace filter for ", path,
			      "the program changed its root directory (chroot); the object stays untraced");
		return;
	}
	if (refused) {
		sf_rt_message("could not make the filter for ", path,
			      "a seccomp filter refuses the calls that run sftrace filter; the object stays untraced");
		return;
	}
	if (run_filter_cli(path, file) < 0)
		sf_rt_message("could not make the filter for ", path,
			      "sftrace filter failed (its message is above); the object stays untraced");
}

int sf_filter_check_object(const struct sf_object_rt *obj)
{
	if (!F.loaded)
		return 0;
	int mismatch;
	if (!find(obj, &mismatch) && F.per_object) {
		char file[4096];
		if (cache_path(obj->path, obj->info.build_id, obj->info.build_id_len, file, sizeof(file)) == 0 &&
		    access(file, F_OK) == 0)
			load_file(file, 1);
	}
	if (!find(obj, &mismatch) && mismatch) {
		sf_rt_message("filter was made for a different build of ", obj->path,
			      "build-id differs; object left untraced (re-run sftrace filter)");
		return -1;
	}
	return 0;
}

int sf_filter_selects(const struct sf_object_rt *obj, uint64_t vaddr, uint8_t *variant)
{
	*variant = SF_VARIANT_PLAIN;
	if (!F.loaded)
		return 1;
	int mismatch;
	struct filter_object *f = find(obj, &mismatch);
	int listed = 0;
	if (f) {
		size_t lo = 0, hi = f->nfuncs;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (f->funcs[mid] < vaddr)
				lo = mid + 1;
			else
				hi = mid;
		}
		listed = lo < f->nfuncs && f->funcs[lo] == vaddr;
	}
	if (F.mode == FF_MODE_WITHIN) {
		if (listed) {
			*variant = SF_VARIANT_WINDOW;
			return 1;
		}
		/* Unlisted objects: with "unlisted skip" their functions are
		 * still recorded inside a window; "trace" records them always. */
		if (!f && F.unlisted == FF_UNLISTED_TRACE)
			return 1;
		*variant = SF_VARIANT_GATED;
		return 1;
	}
	if (!f)
		return F.unlisted == FF_UNLISTED_TRACE;
	return listed;
}
