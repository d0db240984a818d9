/*-------------------------------------------------------------------------
 *
 * latchwait.c
 *	  A pause of a backend or worker on its latch: reported as a wait
 *	  event, ended at once by a query cancel or statement_timeout.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/timestamp.h"

#include "latchwait.h"

void
qc_latch_sleep(int64 ms, QcWaitEvent event)
{
	TimestampTz end = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), ms);

	for (;;)
	{
		long		left;

		CHECK_FOR_INTERRUPTS();
		left = (long) ((end - GetCurrentTimestamp()) / 1000);
		if (left <= 0)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 left, qc_wait_event(event));
		ResetLatch(MyLatch);
	}
}
