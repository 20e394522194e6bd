/* Socket helpers: numeric addresses, listen/connect, whole-buffer send/recv that survive EINTR
 * and partial transfers, and iovec bookkeeping for partial sendmsg. */
#ifndef COPYLAB_SOCKUTIL_H
#define COPYLAB_SOCKUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

struct endpoint {
	struct sockaddr_storage addr;
	socklen_t len;
};

/* Numeric IPv4 or IPv6 address + port. Returns 0, or -1 if text is not such an address. */
int endpoint_parse(struct endpoint *ep, const char *text, unsigned port);
/* "ADDR:PORT" ("[ADDR]:PORT" for IPv6) */
void endpoint_format(const struct sockaddr *sa, char *buf, size_t len);

/* Bound, listening TCP socket (SO_REUSEADDR, close-on-exec); -1 with errno on failure. */
int listen_on(const struct endpoint *ep, int backlog);
/* Connected TCP socket, giving up after timeout_s (errno ETIMEDOUT), with the congestion control
 * named (NULL: the host's); -1 with errno on failure. */
int connect_to(const struct endpoint *ep, double timeout_s, const char *congestion);
/* The port a socket is bound to. */
unsigned local_port(int fd);
int set_nodelay(int fd);
/* ACK at once instead of after the delayed-ACK timer (up to 40 ms); the kernel leaves this mode
 * again on its own, so it is set before each receive it should cover. */
int set_quickack(int fd);
/* TCP congestion control of one socket (TCP_CONGESTION); -1 with errno on failure. */
int set_congestion(int fd, const char *name);
/* Its name into buf ("?" if it cannot be read). */
void get_congestion(int fd, char *buf, size_t len);
/* Can a new TCP socket use this congestion control? 0, or -1 with errno set and the host's
 * available ones (space separated, possibly empty) in available. */
int try_congestion(const char *name, char *available, size_t len);
/* Receive timeout so a silent peer cannot hang us forever. */
int set_recv_timeout(int fd, double seconds);

/* Send all len bytes (MSG_NOSIGNAL); returns len, or -1 with errno. */
ssize_t send_all(int fd, const void *buf, size_t len);
/* Receive exactly len bytes unless EOF comes first; returns bytes received (< len on EOF), -1 with
 * errno. With deadline_ns >= 0 (now_ns() clock) the whole of it must end by then, however the peer
 * spaces its bytes: -1 with EAGAIN when it does not. */
ssize_t recv_all(int fd, void *buf, size_t len, int64_t deadline_ns);
/* Wait until fd is readable (or has EOF or an error), at most until deadline_ns (< 0: no bound).
 * 0, or -1 with errno (EAGAIN: the deadline passed). */
int wait_readable_until(int fd, int64_t deadline_ns);

/* After a sendmsg over mh sent n (< all) of its bytes, point mh at the first unsent byte.
 * While mh still uses the caller's registered array, the rest is first copied into scratch (as
 * many entries as registered), so the registered iovec is never modified. */
void msghdr_resume(struct msghdr *mh, const struct iovec *registered, struct iovec *scratch, size_t n);

#endif
