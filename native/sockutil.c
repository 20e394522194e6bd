#include "sockutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "timing.h"

int endpoint_parse(struct endpoint *ep, const char *text, unsigned port)
{
	memset(ep, 0, sizeof(*ep));
	struct sockaddr_in *v4 = (struct sockaddr_in *)&ep->addr;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ep->addr;

	if (inet_pton(AF_INET, text, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
		ep->len = sizeof(*v4);
		return 0;
	}
	if (inet_pton(AF_INET6, text, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		ep->len = sizeof(*v6);
		return 0;
	}
	return -1;
}

void endpoint_format(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *v4 = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &v4->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(v4->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ntohs(v6->sin6_port));
	} else {
		snprintf(buf, len, "?");
	}
}

int listen_on(const struct endpoint *ep, int backlog)
{
	int one = 1;
	int fd = socket(ep->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (const struct sockaddr *)&ep->addr, ep->len) < 0 || listen(fd, backlog) < 0) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

int connect_to(const struct endpoint *ep, double timeout_s, const char *congestion)
{
	int fd = socket(ep->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int err = 0;
	socklen_t len = sizeof(err);

	if (fd < 0)
		return -1;
	/* before connect(), so the whole connection, from its SYN, runs it */
	if (congestion && set_congestion(fd, congestion) < 0)
		goto fail;
	/* non-blocking, so an address that never answers costs timeout_s, not the kernel's minutes */
	if (connect(fd, (const struct sockaddr *)&ep->addr, ep->len) < 0) {
		if (errno != EINPROGRESS)
			goto fail;
		int64_t deadline = now_ns() + s_to_ns(timeout_s);
		for (;;) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};
			int64_t left_ms = (deadline - now_ns()) / 1000000;
			if (left_ms <= 0) {
				errno = ETIMEDOUT;
				goto fail;
			}
			int n = poll(&p, 1, (int)left_ms);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				goto fail;
			if (n > 0)
				break;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			goto fail;
		if (err != 0) {
			errno = err;
			goto fail;
		}
	}
	int flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
		goto fail;
	return fd;
fail:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

unsigned local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

int set_nodelay(int fd)
{
	int one = 1;
	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int set_quickack(int fd)
{
	int one = 1;
	return setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
}

int set_recv_timeout(int fd, double seconds)
{
	struct timeval tv = {.tv_sec = (time_t)seconds,
			     .tv_usec = (suseconds_t)((seconds - (double)(time_t)seconds) * 1e6)};
	return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

ssize_t send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t r = send(fd, p + done, len - done, MSG_NOSIGNAL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		done += (size_t)r;
	}
	return (ssize_t)done;
}

int wait_readable_until(int fd, int64_t deadline_ns)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int64_t left_ns = deadline_ns < 0 ? -1 : deadline_ns - now_ns();
		if (deadline_ns >= 0 && left_ns <= 0) {
			errno = EAGAIN;
			return -1;
		}
		/* rounded up: a poll of 0 ms would spin until the deadline */
		int rc = poll(&p, 1, left_ns < 0 ? -1 : (int)((left_ns + 999999) / 1000000));
		if (rc > 0)
			return 0;
		if (rc < 0 && errno != EINTR)
			return -1;
	}
}

ssize_t recv_all(int fd, void *buf, size_t len, int64_t deadline_ns)
{
	char *p = buf;
	size_t done = 0;

	while (done < len) {
		if (deadline_ns >= 0 && wait_readable_until(fd, deadline_ns) < 0)
			return -1;
		ssize_t r = recv(fd, p + done, len - done, deadline_ns >= 0 ? MSG_DONTWAIT : 0);
		if (r < 0 && deadline_ns >= 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			continue; /* woken without data after all (poll is a hint): wait again */
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

void msghdr_resume(struct msghdr *mh, const struct iovec *registered, struct iovec *scratch, size_t n)
{
	if (mh->msg_iov == registered) {
		memcpy(scratch, registered, mh->msg_iovlen * sizeof(*scratch));
		mh->msg_iov = scratch;
	}
	while (n > 0 && mh->msg_iovlen > 0) {
		struct iovec *iov = mh->msg_iov;
		if (n >= iov->iov_len) {
			n -= iov->iov_len;
			mh->msg_iov++;
			mh->msg_iovlen--;
		} else {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= n;
			n = 0;
		}
	}
	/* skip fields already finished so the next call never starts on an empty iovec */
	while (mh->msg_iovlen > 0 && mh->msg_iov->iov_len == 0) {
		mh->msg_iov++;
		mh->msg_iovlen--;
	}
}

int set_congestion(int fd, const char *name)
{
	return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, (socklen_t)strlen(name));
}

void get_congestion(int fd, char *buf, size_t len)
{
	socklen_t n = (socklen_t)(len - 1);

	if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, buf, &n) < 0 || n == 0) {
		snprintf(buf, len, "?");
		return;
	}
	buf[n] = '\0'; /* n <= len - 1; the kernel pads the name with NULs */
}

int try_congestion(const char *name, char *available, size_t len)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int rc = fd < 0 ? -1 : set_congestion(fd, name);
	int saved = errno;

	if (fd >= 0)
		close(fd);
	available[0] = '\0';
	if (rc < 0) {
		FILE *f = fopen("/proc/sys/net/ipv4/tcp_available_congestion_control", "r");
		if (f) {
			if (!fgets(available, (int)len, f))
				available[0] = '\0';
			available[strcspn(available, "\n")] = '\0';
			fclose(f);
		}
		errno = saved;
	}
	return rc;
}
