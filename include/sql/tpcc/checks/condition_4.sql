-- Consistency condition 4 (clause 3.3.2.4): for each district, sum(O_OL_CNT) = the number of
-- rows in ORDER_LINE for it.
SELECT d.d_w_id AS w_id, d.d_id AS d_id,
       (SELECT COALESCE(SUM(o.o_ol_cnt), 0) FROM orders AS o
         WHERE o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id) AS ol_cnt_sum,
       (SELECT COUNT(*) FROM order_line AS l
         WHERE l.ol_w_id = d.d_w_id AND l.ol_d_id = d.d_id) AS order_lines
FROM district AS d
ORDER BY d.d_w_id, d.d_id
