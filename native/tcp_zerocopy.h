/* TCP_ZEROCOPY_RECEIVE's argument, as <linux/tcp.h> lays it out (Linux 5.11+; the kernel reads as
 * much of it as optlen says, and caps a longer one at its own size).
 *
 * Declared here rather than taken from <linux/tcp.h>: that header and glibc's <netinet/tcp.h>
 * both define struct tcphdr, so they cannot meet in one translation unit, and the course bundle
 * (lib/copylab/bundle/csource.py) makes each program one. */
#ifndef COPYLAB_TCP_ZEROCOPY_H
#define COPYLAB_TCP_ZEROCOPY_H

#include <netinet/tcp.h>
#include <stdint.h>

#ifndef TCP_ZEROCOPY_RECEIVE
#define TCP_ZEROCOPY_RECEIVE 35
#endif

struct tcp_zc_receive {
	uint64_t address;         /* in: the mapping; the kernel maps whole pages there */
	uint32_t length;          /* in: bytes wanted; out: bytes mapped */
	uint32_t recv_skip_hint;  /* out: bytes to read normally before more can be mapped */
	uint32_t inq;             /* out: bytes left in the receive queue */
	int32_t err;              /* out: a pending socket error */
	uint64_t copybuf_address; /* in: where the kernel may copy what it cannot map (unused here) */
	int32_t copybuf_len;
	uint32_t flags;
	uint64_t msg_control;
	uint64_t msg_controllen;
	uint32_t msg_flags;
	uint32_t reserved;
};

#endif
