"""The listing run: the API's lists of one large scope, the first page and a page deep in it.

One organisation's test environment is filled, in a database of its own, with the events of
``days`` days (every type), their delivery attempts at two endpoints and its payments (every
status and channel), straight into PostgreSQL with ``INSERT … SELECT`` over
``generate_series``, in the rows' own form (ids spelled like ``svc.ids`` spells them,
millisecond times, envelopes as delivered), then vacuumed and analysed. One ``svc api``
process serves the lists over HTTP to one client with a real API key, one request at a time.

Each list is asked for twice: its first page, and the page after a cursor that points half
way into it (a million newer rows for the events of the full fill). The cursor is the
service's own (``svc.cursors``) of the row at that position, found with the service's own
query of the list; the deep page must start with the row after it.

Each request's query is the service's own: the store that answers the route (``Events``,
``Payments``, ``DeliveryLog``) is called with the route's arguments on a stand-in database
that records the SQL and its arguments. The query is then prepared on a connection of the
service's own pool, executed a few times as a pool connection executes its prepared
statements (PostgreSQL settles on its generic or custom plan after five), and explained with
``ANALYZE, BUFFERS``. A plan passes when it reads an index, has no Seq Scan of a table or
partition of more than ``BIG_TABLE`` rows and sorts no more than ``SORT_PAGES`` pages of rows
(a keyset page read in index order sorts none).
"""
