/*-------------------------------------------------------------------------
 *
 * header.h
 *	  A request header as the extension carries it: the type the transport
 *	  sends, the call record keeps and the redactor reads secrets from, so
 *	  it sits at the bottom of the ladder (docs/architecture.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_HEADER_H
#define QC_HEADER_H

/* A request header, validated by qc_http_validate_header(). */
typedef struct QcHeader
{
	char	   *name;
	char	   *value;
} QcHeader;

#endif							/* QC_HEADER_H */
