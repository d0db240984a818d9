/*
 * test/bench/floor.c: the floor for a call on this machine (make bench).
 *
 * A plain HTTP/1.1 client on raw sockets, nothing else: no policy, no audit,
 * no SQL, no TLS, no name lookup.  It measures what any client must pay for
 * the same requests against the same server, so that throughput.sh can print
 * the extension's time as a ratio of it.
 *
 *   floor ADDR PORT PATH N           N GETs, one after the other, on one
 *                                    keep-alive connection: microseconds per
 *                                    request
 *   floor ADDR PORT PATH N INFLIGHT  N GETs on INFLIGHT keep-alive
 *                                    connections at once, driven by poll():
 *                                    seconds for all of them
 *
 * ADDR is an IPv4 address (the bench's nginx listens on loopback).  A
 * response is read whole (Content-Length or chunked) before the next request
 * goes out on its connection.
 */
#define _GNU_SOURCE				/* memmem */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "benchclock.h"

#define BUF_SIZE (256 * 1024)

typedef struct Conn
{
	int			fd;
	char	   *buf;
	size_t		len;
	int			busy;			/* a request is out, its response not read */
} Conn;

static char request[1024];
static size_t request_len;

static void
die(const char *what)
{
	perror(what);
	exit(1);
}

static int
connect_to(const char *addr, int port)
{
	struct sockaddr_in sa;
	int			fd = socket(AF_INET, SOCK_STREAM, 0);
	int			one = 1;

	if (fd < 0)
		die("socket");
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
	{
		fprintf(stderr, "floor: not an IPv4 address: %s\n", addr);
		exit(1);
	}
	if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) != 0)
		die("connect");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/*
 * The length of the complete response at the start of buf, or 0 while it
 * is not all there.  Knows Content-Length and chunked bodies (no trailers).
 */
static size_t
response_length(const char *buf, size_t len)
{
	const char *end = memmem(buf, len, "\r\n\r\n", 4);
	size_t		head;
	const char *p;

	if (end == NULL)
		return 0;
	head = end + 4 - buf;
	for (p = buf; p < end; p = memmem(p, end + 2 - p, "\r\n", 2) + 2)
	{
		size_t		line = (const char *) memmem(p, end + 2 - p, "\r\n", 2) - p;

		if (strncasecmp(p, "Content-Length:", 15) == 0)
		{
			size_t		total = head + strtoul(p + 15, NULL, 10);

			return total <= len ? total : 0;
		}
		if (strncasecmp(p, "Transfer-Encoding:", 18) == 0 && memmem(p, line, "chunked", 7))
			break;
	}
	if (p >= end)
		return head;			/* no body */
	for (p = buf + head;;)
	{
		const char *line_end = memmem(p, len - (p - buf), "\r\n", 2);
		size_t		size;

		if (line_end == NULL)
			return 0;
		size = strtoul(p, NULL, 16);
		p = line_end + 2 + size + 2;
		if ((size_t) (p - buf) > len)
			return 0;
		if (size == 0)
			return p - buf;
	}
}

static void
send_request(Conn *c)
{
	if (write(c->fd, request, request_len) != (ssize_t) request_len)
		die("write");
	c->busy = 1;
}

/* Read what is there; returns 1 once the response is complete. */
static int
read_some(Conn *c)
{
	ssize_t		n = read(c->fd, c->buf + c->len, BUF_SIZE - c->len);
	size_t		done;

	if (n <= 0)
	{
		fprintf(stderr, "floor: connection closed (%s)\n", n < 0 ? strerror(errno) : "EOF");
		exit(1);
	}
	c->len += n;
	if ((done = response_length(c->buf, c->len)) == 0)
	{
		if (c->len == BUF_SIZE)
		{
			fprintf(stderr, "floor: response larger than %d bytes\n", BUF_SIZE);
			exit(1);
		}
		return 0;
	}
	memmove(c->buf, c->buf + done, c->len - done);
	c->len -= done;
	c->busy = 0;
	return 1;
}

static Conn *
open_conns(const char *addr, int port, int n)
{
	Conn	   *conns = calloc(n, sizeof(Conn));

	for (int i = 0; i < n; i++)
	{
		conns[i].fd = connect_to(addr, port);
		if ((conns[i].buf = malloc(BUF_SIZE)) == NULL)
			die("malloc");
	}
	return conns;
}

/* n requests, one after the other on one connection. */
static void
sequential(const char *addr, int port, int n)
{
	Conn	   *c = open_conns(addr, port, 1);
	double		t0;

	/* the first request opens the way (as a warm session would have) */
	send_request(c);
	while (!read_some(c))
		;
	t0 = now_seconds();
	for (int i = 0; i < n; i++)
	{
		send_request(c);
		while (!read_some(c))
			;
	}
	printf("%.1f\n", (now_seconds() - t0) * 1e6 / n);
}

/* n requests, inflight connections at once. */
static void
concurrent(const char *addr, int port, int n, int inflight)
{
	Conn	   *conns;
	struct pollfd *fds = calloc(inflight, sizeof(struct pollfd));
	int			sent = 0;
	int			done = 0;
	double		t0;

	if (inflight > n)
		inflight = n;
	conns = open_conns(addr, port, inflight);
	t0 = now_seconds();
	for (int i = 0; i < inflight; i++)
	{
		send_request(&conns[i]);
		sent++;
		fds[i].fd = conns[i].fd;
		fds[i].events = POLLIN;
	}
	while (done < n)
	{
		if (poll(fds, inflight, -1) < 0)
			die("poll");
		for (int i = 0; i < inflight; i++)
		{
			if (!(fds[i].revents & (POLLIN | POLLERR | POLLHUP)) || !read_some(&conns[i]))
				continue;
			done++;
			if (sent < n)
			{
				send_request(&conns[i]);
				sent++;
			}
		}
	}
	printf("%.3f\n", now_seconds() - t0);
}

int
main(int argc, char **argv)
{
	int			port;
	int			n;

	if (argc != 5 && argc != 6)
	{
		fprintf(stderr, "usage: floor ADDR PORT PATH N [INFLIGHT]\n");
		return 2;
	}
	port = atoi(argv[2]);
	n = atoi(argv[4]);
	request_len = snprintf(request, sizeof(request),
						   "GET %s HTTP/1.1\r\nHost: %s:%d\r\nAccept: */*\r\n\r\n",
						   argv[3], argv[1], port);
	if (argc == 5)
		sequential(argv[1], port, n);
	else
		concurrent(argv[1], port, n, atoi(argv[5]));
	return 0;
}
