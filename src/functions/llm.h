/*-------------------------------------------------------------------------
 *
 * llm.h
 *	  The LLM tool loop (llm.c): llm_chat_tools, and web_fetch's
 *	  extract_prompt.  The conversation is chat.h's, the tools tools.h's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_LLM_H
#define QC_LLM_H

/*
 * web_fetch's extract_prompt.  qc_llm_check_extract() validates before the
 * page is fetched; qc_llm_extract() asks the model and returns its answer
 * (NULL when it gave none).
 */
extern void qc_llm_check_extract(const char *instruction);
extern char *qc_llm_extract(const char *url, const char *page, bool page_cut,
							const char *instruction);

#endif							/* QC_LLM_H */
