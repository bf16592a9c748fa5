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
 * LastModified is read with the credentials' ISO 8601 parser
 * (s3_creds_parse_time(): fields range-checked, no locale, no time zone),
 * and leniently: S3-compatible servers vary, so a missing, malformed or
 * repeated one leaves the object's mtime 0 and never fails the page.
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
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libxml/SAX2.h>
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

/* A parser context for a body of len bytes: NULL with *rc EPROTO for an
 * empty or oversized one, ENOMEM. */
static xmlParserCtxtPtr xml_new_ctxt(const char *body, size_t len, int *rc)
{
	xmlParserCtxtPtr ctxt;

	*rc = EPROTO;
	if (!body || len == 0 || len > XML_MAX_BODY || len > INT_MAX)
		return NULL;
	pthread_once(&xml_once, xml_init_once);
	ctxt = xmlNewParserCtxt();
	if (!ctxt)
		*rc = ENOMEM;
	return ctxt;
}

/*
 * Parses body with ctxt (its SAX handler) and opts.  A few libxml2 paths
 * (encoding errors) report without a parser context, through the calling
 * thread's handler (thread-local in libxml2): it is silenced for the
 * duration of the parse only.
 */
static xmlDocPtr xml_parse_quietly(xmlParserCtxtPtr ctxt, const char *body,
				   size_t len, int opts)
{
	xmlStructuredErrorFunc old_structured = xmlStructuredError;
	void *old_structured_ctx = xmlStructuredErrorContext;
	xmlDocPtr doc;

	xmlSetStructuredErrorFunc(NULL, xml_silent_error);
	doc = xmlCtxtReadMemory(ctxt, body, (int)len, NULL, NULL, opts);
	xmlSetStructuredErrorFunc(old_structured_ctx, old_structured);
	return doc;
}

/*
 * Parses body into *out.  Returns 0, ENOMEM, or EPROTO for an empty,
 * oversized, malformed or DTD-carrying document.
 */
static int xml_read(const char *body, size_t len, bool recover, xmlDocPtr *out)
{
	xmlParserCtxtPtr ctxt = NULL;
	xmlDocPtr doc = NULL;
	bool saw_dtd = false;
	int opts = XML_PARSE_NONET | XML_PARSE_NOBLANKS;
	int rc = EPROTO;

	*out = NULL;
	ctxt = xml_new_ctxt(body, len, &rc);
	if (!ctxt)
		return rc;
	rc = EPROTO;
	ctxt->_private = &saw_dtd;
	ctxt->sax->serror = xml_silent_error;
	ctxt->sax->internalSubset = xml_reject_dtd;
	ctxt->sax->externalSubset = NULL;
	if (recover)
		opts |= XML_PARSE_RECOVER;
	doc = xml_parse_quietly(ctxt, body, len, opts);

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
	const xmlNode *only = n->children;
	xmlChar *c;
	char *s;

	/* one text node, as in almost every element: its own string, not a
	 * copy to copy again (a listing has three per key) */
	if (only && !only->next && only->type == XML_TEXT_NODE && only->content)
		return strdup((const char *)only->content);
	c = xmlNodeGetContent(n);
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

/* "true"/"1" or "false"/"0", blanks around them allowed (s is trimmed
 * in place): 0, else EPROTO. */
static int xml_bool(char *s, bool *out)
{
	const char *t = xml_trim(s);

	if (strcmp(t, "true") == 0 || strcmp(t, "1") == 0)
		*out = true;
	else if (strcmp(t, "false") == 0 || strcmp(t, "0") == 0)
		*out = false;
	else
		return EPROTO;
	return 0;
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

/* ---- ListObjectsV2 pages, through SAX ---- */

/*
 * A listing page is read with SAX callbacks rather than a tree: a page of
 * 1,000 keys is 6,000 elements, and building and freeing their nodes (each
 * free wiped, see above) cost more than everything else a parallel listing
 * of a million keys does on the client.  The rules are the tree's: the
 * root must be ListBucketResult; its direct children IsTruncated (once),
 * NextContinuationToken and EncodingType (at most once each) and Contents;
 * each Contents' direct children Key, ETag and Size, once each, and
 * LastModified, which may be missing, malformed or repeated (mtime 0); an
 * element's text is all the text inside it, nested elements included.
 */
enum list_field {
	FIELD_NONE = 0,
	FIELD_TRUNCATED,
	FIELD_TOKEN,
	FIELD_ENCODING,
	FIELD_KEY,
	FIELD_ETAG,
	FIELD_SIZE,
	FIELD_MODIFIED,
};

struct list_sax {
	struct store_list_page page;
	size_t cap;	       /* of page.objects */
	int rc;		       /* the first error: the parse stops */
	unsigned depth;	       /* elements open */
	bool in_contents;      /* a <Contents> is open (depth 2) */
	enum list_field field; /* whose text is being gathered */
	unsigned field_depth;  /* the depth of its element */
	struct util_buf text;
	struct store_object obj; /* the <Contents> being read */
	bool saw_modified;	 /* it has had a <LastModified> */
	char *size;
	char *truncated;
	char *encoding;
	bool *saw_dtd;
};

/* A DOCTYPE in a listing page: stop right here, as xml_reject_dtd does. */
static void xml_reject_list_dtd(void *user, const xmlChar *name,
				const xmlChar *external_id,
				const xmlChar *system_id)
{
	xmlParserCtxtPtr ctxt = user;
	struct list_sax *st = ctxt->_private;

	(void)name;
	(void)external_id;
	(void)system_id;
	*st->saw_dtd = true;
	xmlStopParser(ctxt);
}

static void list_stop(xmlParserCtxtPtr ctxt, struct list_sax *st, int rc)
{
	if (!st->rc)
		st->rc = rc;
	xmlStopParser(ctxt);
}

static void list_start(void *user, const xmlChar *localname,
		       const xmlChar *prefix, const xmlChar *uri, int nns,
		       const xmlChar **ns, int nattrs, int ndefaulted,
		       const xmlChar **attrs)
{
	xmlParserCtxtPtr ctxt = user;
	struct list_sax *st = ctxt->_private;
	const char *name = (const char *)localname;
	static const struct {
		const char *name;
		enum list_field field;
		bool in_contents;
	} fields[] = {
	    {"IsTruncated", FIELD_TRUNCATED, false},
	    {"NextContinuationToken", FIELD_TOKEN, false},
	    {"EncodingType", FIELD_ENCODING, false},
	    {"Key", FIELD_KEY, true},
	    {"ETag", FIELD_ETAG, true},
	    {"Size", FIELD_SIZE, true},
	    {"LastModified", FIELD_MODIFIED, true},
	};

	(void)prefix;
	(void)uri;
	(void)nns;
	(void)ns;
	(void)nattrs;
	(void)ndefaulted;
	(void)attrs;
	if (st->rc)
		return;
	st->depth++;
	if (st->depth == 1 && strcmp(name, "ListBucketResult") != 0) {
		list_stop(ctxt, st, EPROTO);
		return;
	}
	if (st->depth == 2 && strcmp(name, "Contents") == 0) {
		st->in_contents = true;
		return;
	}
	if (st->field != FIELD_NONE || st->depth != (st->in_contents ? 3u : 2u))
		return;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (fields[i].in_contents == st->in_contents &&
		    strcmp(name, fields[i].name) == 0) {
			st->field = fields[i].field;
			st->field_depth = st->depth;
			util_buf_reset(&st->text);
			return;
		}
	}
}

static void list_text(void *user, const xmlChar *ch, int len)
{
	xmlParserCtxtPtr ctxt = user;
	struct list_sax *st = ctxt->_private;

	if (st->rc || st->field == FIELD_NONE || len <= 0)
		return;
	if (util_buf_append(&st->text, ch, (size_t)len))
		list_stop(ctxt, st, ENOMEM);
}

/* The gathered text into *dst, which must be empty (a second element of
 * the same name is EPROTO). */
static int list_take_text(struct list_sax *st, char **dst)
{
	if (*dst)
		return EPROTO;
	*dst = st->text.data ? util_buf_take(&st->text) : strdup("");
	return *dst ? 0 : ENOMEM;
}

/* The gathered LastModified into the object being read: its time, or 0
 * when it does not parse or is not the first of its <Contents> (never an
 * error). */
static void list_take_mtime(struct list_sax *st)
{
	time_t t = 0;

	if (!st->saw_modified && st->text.data &&
	    s3_creds_parse_time(xml_trim(st->text.data), &t) == 0)
		st->obj.mtime = (int64_t)t;
	else
		st->obj.mtime = 0;
	st->saw_modified = true;
}

/* The <Contents> just closed joins the page. */
static int list_add_object(struct list_sax *st)
{
	struct store_object *o = &st->obj;
	int rc = EPROTO;

	if (!o->key || !o->etag || !st->size)
		goto fail;
	/* the ETag goes into an If-Match header: no CR, LF or other
	 * controls */
	for (const char *q = o->etag; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			goto fail;
	if (util_parse_uint(xml_trim(st->size), 0, UINT64_MAX, &o->size) != 0)
		goto fail;
	if (st->page.count == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 64;
		struct store_object *p =
		    realloc(st->page.objects, cap * sizeof(*p));

		if (!p) {
			rc = ENOMEM;
			goto fail;
		}
		st->page.objects = p;
		st->cap = cap;
	}
	st->page.objects[st->page.count++] = *o;
	memset(o, 0, sizeof(*o));
	rc = 0;
fail:
	free(st->size);
	st->size = NULL;
	st->saw_modified = false;
	store_object_clear(o);
	return rc;
}

/* Where each field's text goes, in struct list_sax (LastModified's goes
 * through list_take_mtime()). */
static const size_t field_offset[] = {
    [FIELD_TRUNCATED] = offsetof(struct list_sax, truncated),
    [FIELD_TOKEN] = offsetof(struct list_sax, page.next_token),
    [FIELD_ENCODING] = offsetof(struct list_sax, encoding),
    [FIELD_KEY] = offsetof(struct list_sax, obj.key),
    [FIELD_ETAG] = offsetof(struct list_sax, obj.etag),
    [FIELD_SIZE] = offsetof(struct list_sax, size),
};

static void list_end(void *user, const xmlChar *localname,
		     const xmlChar *prefix, const xmlChar *uri)
{
	xmlParserCtxtPtr ctxt = user;
	struct list_sax *st = ctxt->_private;
	int rc = 0;

	(void)localname;
	(void)prefix;
	(void)uri;
	if (st->rc)
		return;
	if (st->field == FIELD_MODIFIED && st->depth == st->field_depth) {
		list_take_mtime(st);
		st->field = FIELD_NONE;
	} else if (st->field != FIELD_NONE && st->depth == st->field_depth) {
		rc = list_take_text(
		    st, (char **)((char *)st + field_offset[st->field]));
		st->field = FIELD_NONE;
	} else if (st->depth == 2 && st->in_contents) {
		st->in_contents = false;
		rc = list_add_object(st);
	}
	st->depth--;
	if (rc)
		list_stop(ctxt, st, rc);
}

/* After the parse: the page's own fields, then the keys (EncodingType may
 * come after the objects). */
static int list_finish(struct list_sax *st)
{
	struct store_list_page *p = &st->page;
	bool url_encoded = false;

	if (!st->truncated || xml_bool(st->truncated, &p->truncated))
		return EPROTO;
	if (st->encoding) {
		if (strcmp(xml_trim(st->encoding), "url") != 0)
			return EPROTO;
		url_encoded = true;
	}
	if (p->truncated) {
		if (!p->next_token || p->next_token[0] == '\0')
			return EPROTO;
	} else {
		free(p->next_token);
		p->next_token = NULL;
	}
	for (size_t i = 0; i < p->count; i++) {
		char *key = p->objects[i].key;

		if (url_encoded && xml_url_decode(key) != 0)
			return EPROTO;
		if (key[0] == '\0')
			return EPROTO;
	}
	return 0;
}

int s3_xml_parse_list(const char *body, size_t len,
		      struct store_list_page *page)
{
	struct list_sax st;
	xmlParserCtxtPtr ctxt = NULL;
	bool saw_dtd = false;
	int rc = EPROTO;

	memset(page, 0, sizeof(*page));
	memset(&st, 0, sizeof(st));
	util_buf_init(&st.text, XML_MAX_BODY);
	ctxt = xml_new_ctxt(body, len, &rc);
	if (!ctxt)
		return rc;
	/* libxml2's entity look-up stays (the five predefined entities);
	 * nothing builds a tree */
	*ctxt->sax = (xmlSAXHandler){
	    .initialized = XML_SAX2_MAGIC,
	    .getEntity = xmlSAX2GetEntity,
	    .startElementNs = list_start,
	    .endElementNs = list_end,
	    .characters = list_text,
	    .cdataBlock = list_text,
	    .ignorableWhitespace = list_text,
	    .serror = xml_silent_error,
	    .internalSubset = xml_reject_list_dtd,
	};
	st.saw_dtd = &saw_dtd;
	ctxt->_private = &st;
	/* (no XML_PARSE_NOBLANKS: it would put libxml2's own handler back
	 * for blanks) */
	xml_parse_quietly(ctxt, body, len, XML_PARSE_NONET);

	if (st.rc)
		rc = st.rc;
	else if (saw_dtd || !ctxt->wellFormed || st.depth != 0)
		rc = EPROTO;
	else
		rc = list_finish(&st);
	if (ctxt->myDoc)
		xmlFreeDoc(ctxt->myDoc);
	ctxt->myDoc = NULL;
	xmlFreeParserCtxt(ctxt);
	if (!rc) {
		*page = st.page;
		memset(&st.page, 0, sizeof(st.page));
	}
	store_list_page_clear(&st.page);
	store_object_clear(&st.obj);
	free(st.size);
	free(st.truncated);
	free(st.encoding);
	util_buf_free(&st.text);
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
