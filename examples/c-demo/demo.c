/* The bundled example: a small word-frequency program with a hash table,
 * a sort and worker threads, built with XRay sleds. scripts/example.sh
 * records it and shows the trace. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKETS 4096
#define NWORKERS 4

struct entry {
	char word[32];
	int count;
	struct entry *next;
};

struct table {
	struct entry *buckets[NBUCKETS];
	pthread_mutex_t lock;
};

static const char *const vocabulary[] = {
	"trace", "span", "call", "frame", "thread", "time", "event", "sled", "patch", "log",
	"perfetto", "parquet", "polars", "report", "filter", "record", "convert", "symbol",
};

__attribute__((noinline)) static unsigned hash_word(const char *w)
{
	unsigned h = 2166136261u;
	for (; *w; w++)
		h = (h ^ (unsigned char)*w) * 16777619u;
	return h;
}

__attribute__((noinline)) static void count_word(struct table *t, const char *w)
{
	unsigned b = hash_word(w) % NBUCKETS;
	pthread_mutex_lock(&t->lock);
	struct entry *e = t->buckets[b];
	while (e && strcmp(e->word, w))
		e = e->next;
	if (!e) {
		e = calloc(1, sizeof(*e));
		snprintf(e->word, sizeof(e->word), "%s", w);
		e->next = t->buckets[b];
		t->buckets[b] = e;
	}
	e->count++;
	pthread_mutex_unlock(&t->lock);
}

__attribute__((noinline)) static void make_word(unsigned seed, char *out, size_t cap)
{
	const char *base = vocabulary[seed % (sizeof(vocabulary) / sizeof(vocabulary[0]))];
	snprintf(out, cap, "%s%u", base, (seed / 7) % 13);
}

struct job {
	struct table *table;
	unsigned first, count;
};

__attribute__((noinline)) static void *worker(void *arg)
{
	struct job *j = arg;
	char w[32];
	for (unsigned i = j->first; i < j->first + j->count; i++) {
		make_word(i * 2654435761u, w, sizeof(w));
		count_word(j->table, w);
	}
	return NULL;
}

static int by_count(const void *a, const void *b)
{
	const struct entry *x = *(struct entry *const *)a, *y = *(struct entry *const *)b;
	return y->count - x->count ? y->count - x->count : strcmp(x->word, y->word);
}

__attribute__((noinline)) static size_t collect(struct table *t, struct entry ***out)
{
	size_t n = 0, cap = 64;
	struct entry **v = malloc(cap * sizeof(*v));
	for (int b = 0; b < NBUCKETS; b++)
		for (struct entry *e = t->buckets[b]; e; e = e->next) {
			if (n == cap)
				v = realloc(v, (cap *= 2) * sizeof(*v));
			v[n++] = e;
		}
	qsort(v, n, sizeof(*v), by_count);
	*out = v;
	return n;
}

int main(int argc, char **argv)
{
	unsigned words = argc > 1 ? (unsigned)atoi(argv[1]) : 20000;
	static struct table t = {.lock = PTHREAD_MUTEX_INITIALIZER};
	pthread_t th[NWORKERS];
	struct job jobs[NWORKERS];
	for (int i = 0; i < NWORKERS; i++) {
		jobs[i] = (struct job){&t, i * (words / NWORKERS), words / NWORKERS};
		pthread_create(&th[i], NULL, worker, &jobs[i]);
	}
	for (int i = 0; i < NWORKERS; i++)
		pthread_join(th[i], NULL);
	struct entry **v;
	size_t n = collect(&t, &v);
	printf("%zu distinct words; top: %s (%d)\n", n, n ? v[0]->word : "-", n ? v[0]->count : 0);
	free(v);
	return 0;
}
