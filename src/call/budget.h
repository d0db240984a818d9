/*-------------------------------------------------------------------------
 *
 * budget.h
 *	  queryclaw.max_tokens_per_day: per-role token budgets in shared memory
 *	  (budget.c), and queryclaw.my_budget.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_BUDGET_H
#define QC_BUDGET_H

#include "verdict.h"

/* _PG_init, while preloading: shared memory hooks. */
extern void qc_budget_init(void);

/*
 * Before a request to the LLM or embeddings endpoint: the budget's
 * verdict.  Refused (53400) when the calling role has spent its budget
 * (retry_at: the earliest time tokens leave the window); 55000 when a
 * budget is set but the library was not preloaded.  Never raises nor
 * audits.
 */
extern bool qc_budget_admit(QcVerdict *verdict);

/* After a reply: count the tokens its usage reported. */
extern void qc_budget_count(int64 n);

#endif							/* QC_BUDGET_H */
