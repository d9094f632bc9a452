-- The W3C traceparent of the span that enqueued a job (a tick, a trigger, a
-- program's span), read by the claim so that each attempt's span is its
-- child; NULL when tracing is off.
ALTER TABLE jobs ADD COLUMN trace TEXT;
