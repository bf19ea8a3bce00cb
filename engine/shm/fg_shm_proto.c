
/*
 * fairgate: what both halves of the engine protocol need: one clock, pid
 * liveness, and wake-up datagrams on abstract UNIX sockets.
 *
 * Abstract names (Linux) need no file and no permission: an nginx worker
 * running as another user can wake the engine and be woken, and a name
 * goes away with its process, so nothing is left behind by a crash.  The
 * kernel picks each name (autobind); the peer reads it from the segment.
 *
 * And the identity of a KV block, its chained hash, which the engine's
 * prefix cache keys blocks by and the gateway computes for a prompt.
 */


#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fg_hash.h"
#include "fg_shm_proto.h"


uint64_t
fg_shm_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}


uint64_t
fg_shm_pidns(void)
{
    struct stat  st;

    if (stat("/proc/self/ns/pid", &st) != 0) {
        return 0;
    }

    return (uint64_t) st.st_ino;
}


int
fg_shm_pid_alive(int64_t pid, uint64_t pidns)
{
    /* a pid from another namespace means nothing here: assume alive and
     * let the heartbeat decide */
    if (pid <= 0 || pidns == 0 || pidns != fg_shm_pidns()) {
        return 1;
    }

    if (kill((pid_t) pid, 0) != 0 && errno == ESRCH) {
        return 0;
    }

    return 1;
}


int
fg_shm_socket(char *name, uint32_t *len)
{
    int                 fd;
    socklen_t           alen;
    struct sockaddr_un  sa;

    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd == -1) {
        return -1;
    }

    /* autobind: the kernel gives an unused abstract name */
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;

    if (bind(fd, (struct sockaddr *) &sa, sizeof(sa_family_t)) != 0) {
        goto failed;
    }

    alen = sizeof(sa);

    if (getsockname(fd, (struct sockaddr *) &sa, &alen) != 0
        || alen <= offsetof(struct sockaddr_un, sun_path))
    {
        goto failed;
    }

    *len = (uint32_t) (alen - offsetof(struct sockaddr_un, sun_path));
    memcpy(name, sa.sun_path, *len);

    return fd;

failed:

    close(fd);

    return -1;
}


int
fg_shm_wake(int fd, const char *name, uint32_t len)
{
    char                b;
    struct sockaddr_un  sa;

    if (len == 0 || len > sizeof(sa.sun_path)) {
        errno = EINVAL;
        return -1;
    }

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, name, len);

    b = 1;

    if (sendto(fd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *) &sa,
               (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len))
        != 1)
    {
        return -1;
    }

    return 0;
}


void
fg_shm_drain(int fd)
{
    char  buf[64];

    while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0) {
        /* void */
    }
}


int
fg_shm_name_valid(const char *name)
{
    size_t  len;

    len = strlen(name);

    return name[0] == '/' && len >= 2 && len <= FG_SHM_NAME_MAX + 1
           && strchr(name + 1, '/') == NULL;
}


uint64_t
fg_shm_block_hash(uint64_t prev, const int32_t *tokens, uint32_t n)
{
    uint64_t  h;

    h = XXH3_64bits_withSeed(tokens, (size_t) n * sizeof(int32_t), prev);

    /* the index's marks are never keys */
    return h <= FG_SHM_INDEX_DELETED ? h + 2 : h;
}


uint32_t
fg_shm_block_hashes(const int32_t *tokens, uint32_t n_tokens,
    uint32_t block_size, uint64_t *hashes, uint32_t max)
{
    uint32_t  i, n;
    uint64_t  prev;

    if (block_size == 0) {
        return 0;
    }

    n = n_tokens / block_size;
    n = n < max ? n : max;
    prev = 0;

    for (i = 0; i < n; i++) {
        prev = fg_shm_block_hash(prev, tokens + (size_t) i * block_size,
                                 block_size);
        hashes[i] = prev;
    }

    return n;
}
