-- Consistency condition 3 (clause 3.3.2.3): for each district, max(NO_O_ID) - min(NO_O_ID) + 1 =
-- the number of rows in NEW_ORDERS for it (the undelivered orders are contiguous).
SELECT d.d_w_id AS w_id, d.d_id AS d_id,
       COALESCE(MAX(n.no_o_id) - MIN(n.no_o_id) + 1, 0) AS no_o_id_span,
       COUNT(n.no_o_id) AS new_orders
FROM district AS d LEFT JOIN new_orders AS n ON n.no_w_id = d.d_w_id AND n.no_d_id = d.d_id
GROUP BY d.d_w_id, d.d_id
ORDER BY d.d_w_id, d.d_id
