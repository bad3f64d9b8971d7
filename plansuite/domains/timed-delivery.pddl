; Temporal (PDDL 2.1 level 3) delivery: robots move along corridors in (move-time ?r) time
; units and pick up / drop items in one; the metric is the makespan. Written for plansuite
; (issue 12).
(define (domain timed-delivery)
  (:requirements :strips :typing :durative-actions :numeric-fluents)
  (:types robot room item)
  (:predicates
    (robot-at ?r - robot ?x - room)
    (item-at ?i - item ?x - room)
    (holding ?r - robot ?i - item)
    (free ?r - robot)
    (corridor ?from ?to - room))
  (:functions
    (move-time ?r - robot))
  (:durative-action move
    :parameters (?r - robot ?from ?to - room)
    :duration (= ?duration (move-time ?r))
    :condition (and (at start (robot-at ?r ?from)) (over all (corridor ?from ?to)))
    :effect (and (at start (not (robot-at ?r ?from))) (at end (robot-at ?r ?to))))
  (:durative-action pick
    :parameters (?r - robot ?i - item ?x - room)
    :duration (= ?duration 1)
    :condition (and (at start (item-at ?i ?x)) (at start (free ?r)) (over all (robot-at ?r ?x)))
    :effect (and (at start (not (item-at ?i ?x))) (at start (not (free ?r)))
                 (at end (holding ?r ?i))))
  (:durative-action drop
    :parameters (?r - robot ?i - item ?x - room)
    :duration (= ?duration 1)
    :condition (and (at start (holding ?r ?i)) (over all (robot-at ?r ?x)))
    :effect (and (at start (not (holding ?r ?i))) (at end (item-at ?i ?x)) (at end (free ?r)))))
