/* A loop of N forks, one at a time (bench/fork_exec.sh): MODE 0, the
 * child execs /bin/true at once; 1, it makes one traced call first (its
 * log, and its keeper thread, made); 2, it calls _exit at once. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) int tick(int x)
{
	__asm__ volatile("");
	return x + 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 500, mode = argc > 2 ? atoi(argv[2]) : 0, s = 0;
	for (int i = 0; i < n; i++) {
		s = tick(s);
		pid_t p = fork();
		if (p == 0) {
			if (mode == 2)
				_exit(0);
			if (mode)
				tick(1);
			execl("/bin/true", "true", (char *)0);
			_exit(127);
		}
		int st;
		waitpid(p, &st, 0);
	}
	printf("%d\n", s);
	return 0;
}
