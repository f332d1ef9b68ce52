-- Consistency condition 1 (clause 3.3.2.1): for each warehouse, W_YTD = sum(D_YTD).
-- One row per warehouse: the two sides, compared by Great Expectations.
SELECT w.w_id AS w_id, w.w_ytd AS w_ytd, SUM(d.d_ytd) AS d_ytd_sum
FROM warehouse AS w JOIN district AS d ON d.d_w_id = w.w_id
GROUP BY w.w_id, w.w_ytd
ORDER BY w.w_id
