//! Predicates: filters that decide which events reach an event handler
//! (controller-runtime's `pkg/predicate`).
//!
//! Sources ask every predicate of a watch before they pass an event ([`crate::event`])
//! to its handler; one `false` drops it. Predicates
//! are stateless functions of the event, as in controller-runtime (kube-runtime's
//! predicates remember objects for a TTL; these do not).

mod changed;
mod label_selector;

use std::sync::Arc;

use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};

pub use changed::{
    AnnotationChanged, GenerationChanged, LabelChanged, MetadataChanged, ResourceVersionChanged,
};
pub use label_selector::{LabelSelectorPredicate, SelectorError};

/// Filters events before they reach an event handler. Each method defaults to `true`
/// (pass), like controller-runtime's `predicate.Funcs` with unset fields.
pub trait Predicate<K>: Send + Sync + 'static {
    /// Whether a create event passes.
    fn create(&self, _event: &CreateEvent<K>) -> bool {
        true
    }
    /// Whether an update event passes.
    fn update(&self, _event: &UpdateEvent<K>) -> bool {
        true
    }
    /// Whether a delete event passes.
    fn delete(&self, _event: &DeleteEvent<K>) -> bool {
        true
    }
    /// Whether a generic event passes.
    fn generic(&self, _event: &GenericEvent<K>) -> bool {
        true
    }
}

/// A shared predicate, as sources and combinators hold them.
pub type BoxPredicate<K> = Arc<dyn Predicate<K>>;

impl<K: 'static, P: Predicate<K> + ?Sized> Predicate<K> for Arc<P> {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        (**self).create(e)
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        (**self).update(e)
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        (**self).delete(e)
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        (**self).generic(e)
    }
}

type Check<E> = Box<dyn Fn(&E) -> bool + Send + Sync>;

/// A predicate from optional closures; an unset closure passes every event
/// (controller-runtime's `predicate.Funcs`).
pub struct Funcs<K> {
    /// Filter for create events.
    pub create_func: Option<Check<CreateEvent<K>>>,
    /// Filter for update events.
    pub update_func: Option<Check<UpdateEvent<K>>>,
    /// Filter for delete events.
    pub delete_func: Option<Check<DeleteEvent<K>>>,
    /// Filter for generic events.
    pub generic_func: Option<Check<GenericEvent<K>>>,
}

impl<K> Default for Funcs<K> {
    fn default() -> Self {
        Self {
            create_func: None,
            update_func: None,
            delete_func: None,
            generic_func: None,
        }
    }
}

impl<K> Funcs<K> {
    /// Sets the create filter.
    pub fn on_create(
        mut self,
        f: impl Fn(&CreateEvent<K>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.create_func = Some(Box::new(f));
        self
    }
    /// Sets the update filter.
    pub fn on_update(
        mut self,
        f: impl Fn(&UpdateEvent<K>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.update_func = Some(Box::new(f));
        self
    }
    /// Sets the delete filter.
    pub fn on_delete(
        mut self,
        f: impl Fn(&DeleteEvent<K>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.delete_func = Some(Box::new(f));
        self
    }
    /// Sets the generic filter.
    pub fn on_generic(
        mut self,
        f: impl Fn(&GenericEvent<K>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.generic_func = Some(Box::new(f));
        self
    }
}

impl<K: 'static> Predicate<K> for Funcs<K> {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        self.create_func.as_ref().is_none_or(|f| f(e))
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        self.update_func.as_ref().is_none_or(|f| f(e))
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        self.delete_func.as_ref().is_none_or(|f| f(e))
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        self.generic_func.as_ref().is_none_or(|f| f(e))
    }
}

/// A predicate that applies one object filter to every event; updates are judged by the
/// new object (controller-runtime's `predicate.NewPredicateFuncs`).
pub fn new_predicate_funcs<K: 'static>(
    filter: impl Fn(&K) -> bool + Send + Sync + 'static,
) -> Funcs<K> {
    let filter = Arc::new(filter);
    let (f1, f2, f3, f4) = (filter.clone(), filter.clone(), filter.clone(), filter);
    Funcs::default()
        .on_create(move |e| f1(&e.object))
        .on_update(move |e| f2(&e.object_new))
        .on_delete(move |e| f3(&e.object))
        .on_generic(move |e| f4(&e.object))
}

/// Passes an event only when every predicate passes it (empty: passes everything).
pub struct And<K>(Vec<BoxPredicate<K>>);
/// Passes an event when any predicate passes it (empty: passes nothing).
pub struct Or<K>(Vec<BoxPredicate<K>>);
/// Passes exactly the events its predicate drops.
pub struct Not<K>(BoxPredicate<K>);

/// All of `preds` must pass (controller-runtime's `predicate.And`).
pub fn and<K>(preds: impl IntoIterator<Item = BoxPredicate<K>>) -> And<K> {
    And(preds.into_iter().collect())
}

/// Any of `preds` must pass (controller-runtime's `predicate.Or`).
pub fn or<K>(preds: impl IntoIterator<Item = BoxPredicate<K>>) -> Or<K> {
    Or(preds.into_iter().collect())
}

/// Inverts `pred` (controller-runtime's `predicate.Not`).
pub fn not<K>(pred: impl Predicate<K>) -> Not<K> {
    Not(Arc::new(pred))
}

macro_rules! combine {
    ($t:ident, $all:ident) => {
        impl<K: 'static> Predicate<K> for $t<K> {
            fn create(&self, e: &CreateEvent<K>) -> bool {
                self.0.iter().$all(|p| p.create(e))
            }
            fn update(&self, e: &UpdateEvent<K>) -> bool {
                self.0.iter().$all(|p| p.update(e))
            }
            fn delete(&self, e: &DeleteEvent<K>) -> bool {
                self.0.iter().$all(|p| p.delete(e))
            }
            fn generic(&self, e: &GenericEvent<K>) -> bool {
                self.0.iter().$all(|p| p.generic(e))
            }
        }
    };
}
combine!(And, all);
combine!(Or, any);

impl<K: 'static> Predicate<K> for Not<K> {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        !self.0.create(e)
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        !self.0.update(e)
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        !self.0.delete(e)
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        !self.0.generic(e)
    }
}
