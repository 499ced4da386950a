; Known-bad fixture: C1 with the scale on the wrong axis of the output
; (the batch axis 0 instead of the channel axis 1). Every shape where it
; type-checks needs n = co; the small-tensor check finds a counterexample
; as soon as n = co > 1.

;; @axiom BAD4
;; @about scaling a conv2d's batch axis scales its weight's output channels (WRONG)
;; @shape x = co c h w
;; @shape y = co c kh kw
;; @shape v = co
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (x T) (y T) (v T))
  (= (chmul 0 (conv2d sh sw pad 0 x y) v) (conv2d sh sw pad 0 x (chmul 0 y v)))))
