/*
 * s3 xml: ListObjectsV2 pages and <Error> bodies, parsed with libxml2.
 *
 * Bodies come from the network, so the parser is locked down: no network
 * (XML_PARSE_NONET), no entity substitution, no DTD loading, default size and
 * depth limits (no XML_PARSE_HUGE), bodies over XML_MAX_BODY refused.  A
 * document with a DOCTYPE is stopped the moment the parser sees it (before
 * any entity declaration is read) and rejected, so entity expansion ("billion
 * laughs") and external entities never run.  libxml2's error printing is
 * replaced by a no-op handler on our own parser context.
 *
 * Elements are matched by local name: AWS and s3rver use different
 * namespaces.  Only direct children of the root and of each <Contents> are
 * looked at, so unknown elements of any depth are skipped without recursion.
 * With EncodingType "url" keys are decoded as AWS encodes them
 * (application/x-www-form-urlencoded: %XX, and '+' for a space), the way
 * botocore (unquote_plus) and the AWS SDK for Java decode them.
 *
 * Error bodies are parsed in recovery mode: s3rver writes HTML named entities
 * (&eacute;) into them, which are not XML, and the code must still come out.
 *
 * STS answers (AssumeRoleWithWebIdentity, for the web identity provider)
 * are parsed here too: the credentials strictly, an ErrorResponse like an
 * S3 <Error>.  They carry secrets, so libxml2's free and realloc are set,
 * once and before its first use, to functions that wipe every block they
 * release: the copies inside the parser and the tree never outlive it.
 * Listing pages pay a memset per freed block, which is small next to the
 * parse itself.
 */
#include "config.h"

#include "s3/internal.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#define XML_MAX_BODY ((size_t)64 << 20)

static pthread_once_t xml_once = PTHREAD_ONCE_INIT;

static void xml_wiping_free(void *p)
{
	if (!p)
		return;
	explicit_bzero(p, malloc_usable_size(p));
	free(p);
}

/* realloc() would leave the old block behind unwiped: move by hand */
static void *xml_wiping_realloc(void *p, size_t n)
{
	size_t old;
	void *q;

	if (!p)
		return malloc(n);
	old = malloc_usable_size(p);
	q = malloc(n ? n : 1);
	if (!q)
		return NULL;
	memcpy(q, p, old < n ? old : n);
	xml_wiping_free(p);
	return q;
}

static void xml_init_once(void)
{
	xmlMemSetup(xml_wiping_free, malloc, xml_wiping_realloc, strdup);
	xmlInitParser();
}

static void xml_silent_error(void *user, xmlErrorPtr error)
{
	(void)user;
	(void)error;
}

/* A DOCTYPE: stop right here, before the internal subset is parsed. */
static void xml_reject_dtd(void *user, const xmlChar *name,
			   const xmlChar *external_id, const xmlChar *system_id)
{
	xmlParserCtxtPtr ctxt = user;

	(void)name;
	(void)external_id;
	(void)system_id;
	*(bool *)ctxt->_private = true;
	xmlStopParser(ctxt);
}

/*
 * Parses body into *out.  Returns 0, ENOMEM, or EPROTO for an empty,
 * oversized, malformed or DTD-carrying document.
 */
static int xml_read(const char *body, size_t len, bool recover, xmlDocPtr *out)
{
	xmlParserCtxtPtr ctxt = NULL;
	xmlDocPtr doc = NULL;
	xmlStructuredErrorFunc old_structured;
	void *old_structured_ctx;
	bool saw_dtd = false;
	int opts = XML_PARSE_NONET | XML_PARSE_NOBLANKS;
	int rc = EPROTO;

	*out = NULL;
	if (!body || len == 0 || len > XML_MAX_BODY || len > INT_MAX)
		return EPROTO;
	pthread_once(&xml_once, xml_init_once);
	ctxt = xmlNewParserCtxt();
	if (!ctxt)
		return ENOMEM;
	ctxt->_private = &saw_dtd;
	ctxt->sax->serror = xml_silent_error;
	ctxt->sax->internalSubset = xml_reject_dtd;
	ctxt->sax->externalSubset = NULL;
	if (recover)
		opts |= XML_PARSE_RECOVER;

	/*
	 * A few libxml2 paths (encoding errors) report without a parser
	 * context, through the calling thread's handler (thread-local in
	 * libxml2): silence it for the duration of the parse only.
	 */
	old_structured = xmlStructuredError;
	old_structured_ctx = xmlStructuredErrorContext;
	xmlSetStructuredErrorFunc(NULL, xml_silent_error);

	doc = xmlCtxtReadMemory(ctxt, body, (int)len, NULL, NULL, opts);

	xmlSetStructuredErrorFunc(old_structured_ctx, old_structured);

	if (!doc)
		goto fail;
	if (saw_dtd || doc->intSubset || doc->extSubset)
		goto fail;
	if (!recover && !ctxt->wellFormed)
		goto fail;
	if (!xmlDocGetRootElement(doc))
		goto fail;
	*out = doc;
	doc = NULL;
	rc = 0;
fail:
	if (doc)
		xmlFreeDoc(doc);
	xmlFreeParserCtxt(ctxt);
	return rc;
}

static bool xml_is(const xmlNode *n, const char *local_name)
{
	return n->type == XML_ELEMENT_NODE && n->name &&
	       strcmp((const char *)n->name, local_name) == 0;
}

/* The text of element n, malloc'ed ("" when empty).  NULL on ENOMEM. */
static char *xml_text(const xmlNode *n)
{
	xmlChar *c = xmlNodeGetContent(n);
	char *s;

	if (!c)
		return strdup("");
	s = strdup((const char *)c);
	xmlFree(c);
	return s;
}

static bool xml_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Trims XML white space at both ends, in place. */
static char *xml_trim(char *s)
{
	size_t n;

	while (xml_blank(*s))
		s++;
	n = strlen(s);
	while (n && xml_blank(s[n - 1]))
		s[--n] = '\0';
	return s;
}

static int xml_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Decodes a form-urlencoded key in place: %XX and '+' (space).  Malformed
 * escapes and decoded NUL bytes are EPROTO.
 */
static int xml_url_decode(char *s)
{
	char *r = s;
	char *w = s;

	while (*r) {
		if (*r == '%') {
			int hi = xml_hex(r[1]);
			int lo = hi < 0 ? -1 : xml_hex(r[2]);

			if (hi < 0 || lo < 0)
				return EPROTO;
			if (hi == 0 && lo == 0)
				return EPROTO;
			*w++ = (char)(hi << 4 | lo);
			r += 3;
		} else if (*r == '+') {
			*w++ = ' ';
			r++;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	return 0;
}

/* Fills one object from a <Contents> element. */
static int xml_parse_contents(const xmlNode *contents, bool url_encoded,
			      struct s3_object *obj)
{
	const xmlNode *n;
	char *size = NULL;
	int rc = EPROTO;

	for (n = contents->children; n; n = n->next) {
		char **dst;

		if (xml_is(n, "Key"))
			dst = &obj->key;
		else if (xml_is(n, "ETag"))
			dst = &obj->etag;
		else if (xml_is(n, "Size"))
			dst = &size;
		else
			continue;
		if (*dst) /* duplicate element */
			goto fail;
		*dst = xml_text(n);
		if (!*dst) {
			rc = ENOMEM;
			goto fail;
		}
	}
	if (!obj->key || !obj->etag || !size)
		goto fail;
	if (url_encoded && xml_url_decode(obj->key) != 0)
		goto fail;
	if (obj->key[0] == '\0')
		goto fail;
	/* the ETag goes into an If-Match header: no CR, LF or other controls */
	for (const char *q = obj->etag; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			goto fail;
	if (util_parse_uint(xml_trim(size), 0, UINT64_MAX, &obj->size) != 0)
		goto fail;
	rc = 0;
fail:
	free(size);
	return rc;
}

static int xml_parse_bool(const xmlNode *n, bool *out)
{
	char *s = xml_text(n);
	char *t;
	int rc = EPROTO;

	if (!s)
		return ENOMEM;
	t = xml_trim(s);
	if (strcmp(t, "true") == 0 || strcmp(t, "1") == 0) {
		*out = true;
		rc = 0;
	} else if (strcmp(t, "false") == 0 || strcmp(t, "0") == 0) {
		*out = false;
		rc = 0;
	}
	free(s);
	return rc;
}

/* Parses body and checks that its root element is called name: 0 with
 * *doc (the caller frees it) and *root, or EPROTO / ENOMEM and nothing. */
static int xml_read_root(const char *body, size_t len, bool recover,
			 const char *name, xmlDocPtr *doc, const xmlNode **root)
{
	int rc = xml_read(body, len, recover, doc);

	if (rc)
		return rc;
	*root = xmlDocGetRootElement(*doc);
	if (!xml_is(*root, name)) {
		xmlFreeDoc(*doc);
		*doc = NULL;
		return EPROTO;
	}
	return 0;
}

int s3_xml_parse_list(const char *body, size_t len, struct s3_list_page *page)
{
	struct s3_list_page p = {0};
	xmlDocPtr doc = NULL;
	const xmlNode *root;
	const xmlNode *n;
	char *encoding = NULL;
	bool have_truncated = false;
	bool url_encoded = false;
	size_t ncontents = 0;
	int rc;

	memset(page, 0, sizeof(*page));
	rc = xml_read_root(body, len, false, "ListBucketResult", &doc, &root);
	if (rc)
		return rc;
	rc = EPROTO;

	/* Pass 1: the page's own fields (EncodingType may come last). */
	for (n = root->children; n; n = n->next) {
		if (xml_is(n, "Contents")) {
			ncontents++;
		} else if (xml_is(n, "IsTruncated")) {
			if (have_truncated)
				goto fail;
			have_truncated = true;
			rc = xml_parse_bool(n, &p.truncated);
			if (rc)
				goto fail;
			rc = EPROTO;
		} else if (xml_is(n, "NextContinuationToken")) {
			if (p.next_token)
				goto fail;
			p.next_token = xml_text(n);
			if (!p.next_token) {
				rc = ENOMEM;
				goto fail;
			}
		} else if (xml_is(n, "EncodingType")) {
			if (encoding)
				goto fail;
			encoding = xml_text(n);
			if (!encoding) {
				rc = ENOMEM;
				goto fail;
			}
		}
	}
	if (!have_truncated)
		goto fail;
	if (encoding) {
		if (strcmp(xml_trim(encoding), "url") != 0)
			goto fail;
		url_encoded = true;
	}
	if (p.truncated) {
		if (!p.next_token || p.next_token[0] == '\0')
			goto fail;
	} else {
		free(p.next_token);
		p.next_token = NULL;
	}

	/* Pass 2: the objects. */
	if (ncontents) {
		p.objects = calloc(ncontents, sizeof(*p.objects));
		if (!p.objects) {
			rc = ENOMEM;
			goto fail;
		}
	}
	for (n = root->children; n; n = n->next) {
		if (!xml_is(n, "Contents"))
			continue;
		/* count first: a failed object is freed with the page */
		p.count++;
		rc =
		    xml_parse_contents(n, url_encoded, &p.objects[p.count - 1]);
		if (rc)
			goto fail;
	}
	*page = p;
	memset(&p, 0, sizeof(p));
	rc = 0;
fail:
	s3_list_page_clear(&p);
	free(encoding);
	xmlFreeDoc(doc);
	return rc;
}

/*
 * Copies src into dst (size dstlen), control characters as spaces, cut at
 * a UTF-8 character boundary when it does not fit.
 */
static void xml_copy_field(char *dst, size_t dstlen, const char *src)
{
	size_t n = strlen(src);
	size_t i;

	if (dstlen == 0)
		return;
	if (n >= dstlen) {
		n = dstlen - 1;
		/* do not end inside a multi-byte sequence */
		while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
			n--;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)src[i];

		dst[i] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
	}
	dst[n] = '\0';
}

/* Code and Message of an <Error> element (first of each wins). */
static int xml_error_fields(const xmlNode *error, char *code, size_t codelen,
			    char *message, size_t msglen)
{
	const xmlNode *n;
	bool have_code = false;
	bool have_message = false;

	for (n = error->children; n; n = n->next) {
		bool *seen;
		char *dst;
		size_t dstlen;
		char *text;

		if (xml_is(n, "Code")) {
			seen = &have_code;
			dst = code;
			dstlen = codelen;
		} else if (xml_is(n, "Message")) {
			seen = &have_message;
			dst = message;
			dstlen = msglen;
		} else {
			continue;
		}
		if (*seen) /* first one wins */
			continue;
		*seen = true;
		text = xml_text(n);
		if (!text)
			return ENOMEM;
		xml_copy_field(dst, dstlen, xml_trim(text));
		free(text);
	}
	return 0;
}

/* The only child element of n called name: NULL when there is none, and
 * *dup set when there are several. */
static const xmlNode *xml_child(const xmlNode *n, const char *name, bool *dup)
{
	const xmlNode *found = NULL;
	const xmlNode *c;

	for (c = n->children; c; c = c->next) {
		if (!xml_is(c, name))
			continue;
		if (found)
			*dup = true;
		found = c;
	}
	return found;
}

/*
 * The Code and Message of an error document: its root must be called
 * root_name; the fields are in the root's child element child, or in the
 * root itself when child is NULL.  Both are left empty on any error.
 */
static int xml_parse_error_doc(const char *body, size_t len,
			       const char *root_name, const char *child,
			       char *code, size_t codelen, char *message,
			       size_t msglen)
{
	xmlDocPtr doc = NULL;
	const xmlNode *root;
	const xmlNode *error;
	bool dup = false;
	int rc;

	if (codelen)
		code[0] = '\0';
	if (msglen)
		message[0] = '\0';
	rc = xml_read_root(body, len, true, root_name, &doc, &root);
	if (rc)
		return rc;
	error = child ? xml_child(root, child, &dup) : root;
	rc = error ? xml_error_fields(error, code, codelen, message, msglen)
		   : EPROTO;
	if (rc) {
		if (codelen)
			code[0] = '\0';
		if (msglen)
			message[0] = '\0';
	}
	xmlFreeDoc(doc);
	return rc;
}

int s3_xml_parse_error(const char *body, size_t len, char *code, size_t codelen,
		       char *message, size_t msglen)
{
	return xml_parse_error_doc(body, len, "Error", NULL, code, codelen,
				   message, msglen);
}

int s3_xml_parse_sts_credentials(const char *body, size_t len,
				 struct s3_creds *out, const char **why)
{
	static const char *const names[] = {"AccessKeyId", "SecretAccessKey",
					    "SessionToken", "Expiration"};
	char *text[4] = {NULL, NULL, NULL, NULL};
	const char *value[4];
	struct s3_creds c = {.provider = -1};
	xmlDocPtr doc = NULL;
	const xmlNode *root;
	const xmlNode *n;
	bool dup = false;
	size_t i;
	int rc;

	*why = "not an AssumeRoleWithWebIdentityResponse";
	rc = xml_read_root(body, len, false,
			   "AssumeRoleWithWebIdentityResponse", &doc, &root);
	if (rc)
		return rc;
	rc = EPROTO;
	*why = "no AssumeRoleWithWebIdentityResult";
	n = xml_child(root, "AssumeRoleWithWebIdentityResult", &dup);
	if (!n || dup)
		goto fail;
	*why = "no Credentials";
	n = xml_child(n, "Credentials", &dup);
	if (!n || dup)
		goto fail;
	for (i = 0; i < 4; i++) {
		const xmlNode *f = xml_child(n, names[i], &dup);

		if (!f || dup) {
			*why = i == 0	? "no Credentials/AccessKeyId"
			       : i == 1 ? "no Credentials/SecretAccessKey"
			       : i == 2 ? "no Credentials/SessionToken"
					: "no Credentials/Expiration";
			goto fail;
		}
		text[i] = xml_text(f);
		if (!text[i]) {
			rc = ENOMEM;
			*why = "out of memory";
			goto fail;
		}
		value[i] = xml_trim(text[i]);
		if (!value[i][0] || !s3_creds_value_ok(value[i], i != 1)) {
			*why = i == 0	? "a malformed AccessKeyId"
			       : i == 1 ? "a malformed SecretAccessKey"
			       : i == 2 ? "a malformed SessionToken"
					: "an empty Expiration";
			goto fail;
		}
	}
	if (s3_creds_parse_time(value[3], &c.expiration) != 0) {
		*why = "an Expiration that is not an ISO 8601 time";
		goto fail;
	}
	rc = s3_creds_fill(&c, value[0], value[1], value[2], NULL);
	if (rc) {
		*why = "out of memory";
		goto fail;
	}
	c.source = out->source;
	c.provider = out->provider;
	*out = c;
	*why = NULL;
	rc = 0;
fail:
	for (i = 0; i < 4; i++)
		s3_secret_free(text[i]);
	xmlFreeDoc(doc);
	return rc;
}

int s3_xml_parse_sts_error(const char *body, size_t len, char *code,
			   size_t codelen, char *message, size_t msglen)
{
	return xml_parse_error_doc(body, len, "ErrorResponse", "Error", code,
				   codelen, message, msglen);
}

void s3_list_page_clear(struct s3_list_page *page)
{
	size_t i;

	if (!page)
		return;
	for (i = 0; i < page->count; i++) {
		free(page->objects[i].key);
		free(page->objects[i].etag);
	}
	free(page->objects);
	free(page->next_token);
	memset(page, 0, sizeof(*page));
}
