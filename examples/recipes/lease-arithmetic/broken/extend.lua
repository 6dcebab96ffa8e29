-- Move the end of the caller's lease. The bug: the entry is written back
-- whether or not it is still there, so a holder whose lease ran out (and
-- whose lock another client has taken since) holds it again.
-- KEYS[1] the set; ARGV[1] the client's time (ms), ARGV[2] the new end
-- (ms), ARGV[3] the token, ARGV[4] the lease (ms). Returns 1.
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
