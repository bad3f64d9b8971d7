; Numeric (PDDL 2.1 level 2) delivery: trucks burn one unit of fuel per road, carry at most
; (capacity ?t) packages; the metric counts the fuel burnt. Written for plansuite (issue 12).
(define (domain fuel-delivery)
  (:requirements :strips :typing :numeric-fluents)
  (:types truck location package)
  (:predicates
    (at ?t - truck ?l - location)
    (pkg-at ?p - package ?l - location)
    (in ?p - package ?t - truck)
    (road ?from ?to - location))
  (:functions
    (fuel ?t - truck)
    (carried ?t - truck)
    (capacity ?t - truck)
    (fuel-used))
  (:action drive
    :parameters (?t - truck ?from ?to - location)
    :precondition (and (at ?t ?from) (road ?from ?to) (>= (fuel ?t) 1))
    :effect (and (not (at ?t ?from)) (at ?t ?to)
                 (decrease (fuel ?t) 1) (increase (fuel-used) 1)))
  (:action load
    :parameters (?p - package ?t - truck ?l - location)
    :precondition (and (at ?t ?l) (pkg-at ?p ?l) (< (carried ?t) (capacity ?t)))
    :effect (and (not (pkg-at ?p ?l)) (in ?p ?t) (increase (carried ?t) 1)))
  (:action unload
    :parameters (?p - package ?t - truck ?l - location)
    :precondition (and (at ?t ?l) (in ?p ?t))
    :effect (and (not (in ?p ?t)) (pkg-at ?p ?l) (decrease (carried ?t) 1))))
