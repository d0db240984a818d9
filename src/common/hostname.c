/*-------------------------------------------------------------------------
 *
 * hostname.c
 *	  Map a URL's host to the one ASCII form that the policy decides on and
 *	  that libcurl is given to resolve and connect to.
 *
 * A browser reads "ｅｘａｍｐｌｅ．ｃｏｍ", "example。com", "EXAMPLE.com."
 * and "example.com" as the same host, and "0x7f.1" as 127.0.0.1; a policy
 * that compared the text as written would let each of them past a rule
 * written for the other.  So a host is mapped once, before any decision:
 * non-ASCII text through IDNA (UTS #46, non-transitional, with libidn2,
 * as libcurl does), then lower case and no final dot; and a host that ends
 * in a number must be an IPv4 address, which is then written as a dotted
 * quad (the WHATWG URL standard's IPv4 parser).  What comes out is what
 * the host lists are matched against and what the URL handed to libcurl
 * holds, so the two can never disagree.
 *
 * ASCII host names are not sent through IDNA: libcurl resolves them as
 * they are, so the policy must see them as they are too.
 *
 *-------------------------------------------------------------------------
 */
#include "hostname.h"

#include <idn2.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* Copy src, in lower case, into out; false when it does not fit. */
static bool
copy_lower(const char *src, char *out, size_t outsize)
{
	size_t		len = strlen(src);

	if (len >= outsize)
		return false;
	for (size_t i = 0; i <= len; i++)
		out[i] = (src[i] >= 'A' && src[i] <= 'Z') ? (char) (src[i] - 'A' + 'a') : src[i];
	return true;
}

static bool
is_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char) *s >= 0x80)
			return false;
	return true;
}

/* "[v6]" or "v6": the canonical text of the address. */
static bool
map_ipv6(const char *host, QcHostName *out, char *err, size_t errlen)
{
	char		buf[64];
	size_t		len = strlen(host);

	if (host[0] == '[')
	{
		if (len < 2 || host[len - 1] != ']' || len - 2 >= sizeof(buf))
			goto bad;
		memcpy(buf, host + 1, len - 2);
		buf[len - 2] = '\0';
	}
	else if (len < sizeof(buf))
		memcpy(buf, host, len + 1);
	else
		goto bad;
	if (!qc_inet_parse(buf, &out->addr) || out->addr.family != AF_INET6)
		goto bad;
	out->is_ip = true;
	qc_inet_format(&out->addr, out->name, sizeof(out->name));
	return true;

bad:
	snprintf(err, errlen, "The host \"%.80s\" is not a valid IPv6 address.", host);
	return false;
}

/*
 * One part of an IPv4 address, WHATWG style: "0x" starts hexadecimal, a
 * leading "0" octal, else decimal; "0x" alone is 0.  Values above 2^32
 * are kept as 2^32 + 1 (too large in any position).
 */
static bool
ipv4_number(const char *s, size_t len, uint64_t *value)
{
	int			radix = 10;

	if (len == 0)
		return false;
	if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
	{
		radix = 16;
		s += 2;
		len -= 2;
	}
	else if (len >= 2 && s[0] == '0')
	{
		radix = 8;
		s++;
		len--;
	}
	*value = 0;
	for (size_t i = 0; i < len; i++)
	{
		int			c = (unsigned char) s[i];
		int			digit;

		if (c >= '0' && c <= '9')
			digit = c - '0';
		else if (c >= 'a' && c <= 'f')
			digit = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			digit = c - 'A' + 10;
		else
			return false;
		if (digit >= radix)
			return false;
		*value = *value * radix + digit;
		if (*value > UINT32_MAX)
			*value = (uint64_t) UINT32_MAX + 2;
	}
	return true;
}

/* WHATWG "ends in a number": the last label is digits, or a number. */
static bool
ends_in_number(const char *host)
{
	const char *dot = strrchr(host, '.');
	const char *last = dot ? dot + 1 : host;
	uint64_t	value;

	if (*last == '\0')
		return false;
	if (strspn(last, "0123456789") == strlen(last))
		return true;
	return ipv4_number(last, strlen(last), &value);
}

/* The WHATWG IPv4 parser: one to four parts, the last filling the rest. */
static bool
parse_ipv4(const char *host, QcInetAddr *addr)
{
	uint64_t	parts[4];
	int			n = 0;
	uint64_t	value;
	const char *p = host;

	for (;;)
	{
		size_t		len = strcspn(p, ".");

		if (n == 4 || !ipv4_number(p, len, &parts[n]))
			return false;
		n++;
		if (p[len] == '\0')
			break;
		p += len + 1;
	}
	for (int i = 0; i < n - 1; i++)
		if (parts[i] > 255)
			return false;
	if (parts[n - 1] >= ((uint64_t) 1 << (8 * (5 - n))))
		return false;
	value = parts[n - 1];
	for (int i = 0; i < n - 1; i++)
		value += parts[i] << (8 * (3 - i));
	memset(addr, 0, sizeof(*addr));
	addr->family = AF_INET;
	addr->bytes[0] = (uint8_t) (value >> 24);
	addr->bytes[1] = (uint8_t) (value >> 16);
	addr->bytes[2] = (uint8_t) (value >> 8);
	addr->bytes[3] = (uint8_t) value;
	return true;
}

/* Non-ASCII text through IDNA into out; false with err when it fails. */
static bool
map_idna(const char *host, char *out, size_t outsize, char *err, size_t errlen)
{
	char	   *mapped = NULL;
	int			rc;
	bool		fits;

	rc = idn2_lookup_u8((const uint8_t *) host, (uint8_t **) &mapped,
						IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
	if (rc != IDN2_OK)
	{
		snprintf(err, errlen,
				 "The host is not a valid internationalised domain name: %s.",
				 idn2_strerror(rc));
		idn2_free(mapped);
		return false;
	}
	fits = copy_lower(mapped, out, outsize);
	idn2_free(mapped);
	if (!fits)
		snprintf(err, errlen, "The host name is longer than %d bytes.", QC_HOST_MAX);
	return fits;
}

/* Letters, digits, '-', '.', '_' only, and no empty label. */
static bool
check_name(const char *name, char *err, size_t errlen)
{
	size_t		bad = strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-._");
	unsigned char c = (unsigned char) name[bad];

	if (c != '\0')
	{
		if (c > 0x20 && c < 0x7f)
			snprintf(err, errlen, "The host contains \"%c\", which host names cannot contain.", c);
		else
			snprintf(err, errlen, "The host contains the byte 0x%02X, which host names cannot contain.", c);
		return false;
	}
	if (name[0] == '.' || strstr(name, "..") != NULL || name[strlen(name) - 1] == '.')
	{
		snprintf(err, errlen, "The host name \"%.80s\" has an empty label.", name);
		return false;
	}
	return true;
}

bool
qc_host_to_ascii(const char *host, QcHostName *out, char *err, size_t errlen)
{
	char	   *name = out->name;
	size_t		len;

	memset(out, 0, sizeof(*out));
	if (host[0] == '[' || strchr(host, ':') != NULL)
		return map_ipv6(host, out, err, errlen);
	if (is_ascii(host))
	{
		if (!copy_lower(host, name, sizeof(out->name)))
		{
			snprintf(err, errlen, "The host name is longer than %d bytes.", QC_HOST_MAX);
			return false;
		}
	}
	else if (!map_idna(host, name, sizeof(out->name), err, errlen))
		return false;

	len = strlen(name);
	if (len > 0 && name[len - 1] == '.')
		name[--len] = '\0';
	if (len == 0)
	{
		snprintf(err, errlen, "The URL has no host.");
		return false;
	}
	if (!check_name(name, err, errlen))
		return false;
	if (!ends_in_number(name))
		return true;
	if (!parse_ipv4(name, &out->addr))
	{
		snprintf(err, errlen,
				 "The host \"%.80s\" ends in a number but is not a valid IPv4 address.", name);
		return false;
	}
	out->is_ip = true;
	qc_inet_format(&out->addr, name, sizeof(out->name));
	return true;
}
