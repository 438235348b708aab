//! ctrl-derive: `#[derive(ApplyConfiguration)]`, the typed server-side apply form of a type
//! (client-go's generated `applyconfigurations`, kubebuilder's `--ssa`), re-exported by the
//! `ctrl` facade. The traits it implements and the built-in kinds' apply configurations live in
//! `ctrl::client::apply` (ctrl-runtime's `client/apply`); this crate only writes code.
//!
//! On a struct `FooSpec` with named fields it writes `FooSpecApply`: the same fields, each
//! `Option<<T as ApplyConfiguration>::Apply>` (an `Option<T>` field becomes `Option<T::Apply>`,
//! a nested derived type its own `Apply`), skipped when unset, with the struct's
//! `#[serde(rename_all)]` and each field's `#[serde(rename)]` kept so the JSON names match; a
//! builder method per field (`spec.size(3)`); and `impl ApplyConfiguration for FooSpec`.
//!
//! Next to kube's `#[derive(CustomResource)]` it reads the `#[kube(group, version, kind,
//! namespaced, status)]` attributes and also writes the whole object's `FooApply`
//! (`apiVersion`, `kind`, `metadata`, `spec`, `status`), its `new(name[, namespace])` and
//! `impl ObjectApply`, which `client.apply_config(&ac, ..)` sends. The generated code names
//! `::ctrl::client::apply`; `#[apply(crate = "path::to::apply")]` names another path.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::{format_ident, quote};
use syn::{Attribute, Data, DeriveInput, Fields, Ident, LitStr, Path, Token, Type};

/// Derives the apply configuration `<Name>Apply` of a struct with named fields, and of the
/// whole object when the struct carries kube's `#[kube(..)]` attributes. See the crate docs.
#[proc_macro_derive(ApplyConfiguration, attributes(apply))]
pub fn derive_apply_configuration(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// One field of the input.
struct Field {
    ident: Ident,
    ty: Type,
    /// `#[serde(rename = "..")]`, kept.
    rename: Option<LitStr>,
}

/// What kube's `#[kube(..)]` says about the object.
#[derive(Default)]
struct KubeAttrs {
    group: Option<String>,
    version: Option<String>,
    kind: Option<String>,
    namespaced: bool,
    status: Option<String>,
}

fn expand(input: &DeriveInput) -> syn::Result<Tokens> {
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "ApplyConfiguration does not support generic types",
        ));
    }
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "ApplyConfiguration derives only on structs",
        ));
    };
    let Fields::Named(named) = &data.fields else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "ApplyConfiguration needs named fields",
        ));
    };
    let krate = crate_path(&input.attrs)?;
    let fields = named
        .named
        .iter()
        .map(|f| {
            Ok(Field {
                ident: f.ident.clone().expect("named field"),
                ty: f.ty.clone(),
                rename: serde_value(&f.attrs, "rename")?,
            })
        })
        .collect::<syn::Result<Vec<_>>>()?;
    let rename_all = serde_value(&input.attrs, "rename_all")?;
    let mut out = apply_struct(&input.ident, &fields, rename_all.as_ref(), &krate);
    let kube = kube_attrs(&input.attrs)?;
    if let Some(kind) = &kube.kind {
        out.extend(object_struct(&input.ident, kind, &kube, &krate)?);
    }
    Ok(out)
}

/// `#[apply(crate = "..")]`, else `::ctrl::client::apply`.
fn crate_path(attrs: &[Attribute]) -> syn::Result<Path> {
    let mut path: Path = syn::parse_quote!(::ctrl::client::apply);
    for a in attrs.iter().filter(|a| a.path().is_ident("apply")) {
        a.parse_nested_meta(|m| {
            if m.path.is_ident("crate") {
                path = m.value()?.parse::<LitStr>()?.parse()?;
                Ok(())
            } else {
                Err(m.error("expected `crate = \"path\"`"))
            }
        })?;
    }
    Ok(path)
}

/// The string value of `#[serde(<key> = "..")]`, other serde settings skipped.
fn serde_value(attrs: &[Attribute], key: &str) -> syn::Result<Option<LitStr>> {
    let mut found = None;
    for a in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        a.parse_nested_meta(|m| {
            let hit = m.path.is_ident(key);
            let value = skip_value(&m)?;
            if let (
                true,
                Some(syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                })),
            ) = (hit, value)
            {
                found = Some(s);
            }
            Ok(())
        })?;
    }
    Ok(found)
}

/// Consumes the value of a nested meta item, whatever its form: `key`, `key = expr`,
/// `key(..)`; returns the expression of `key = expr`.
fn skip_value(m: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<Option<syn::Expr>> {
    if m.input.peek(Token![=]) {
        return Ok(Some(m.value()?.parse::<syn::Expr>()?));
    }
    if m.input.peek(syn::token::Paren) {
        m.parse_nested_meta(|inner| skip_value(&inner).map(|_| ()))?;
    }
    Ok(None)
}

fn kube_attrs(attrs: &[Attribute]) -> syn::Result<KubeAttrs> {
    let mut k = KubeAttrs::default();
    for a in attrs.iter().filter(|a| a.path().is_ident("kube")) {
        a.parse_nested_meta(|m| {
            let key = m.path.get_ident().map(Ident::to_string).unwrap_or_default();
            let value = skip_value(&m)?;
            let text = match value {
                Some(syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                })) => Some(s.value()),
                _ => None,
            };
            match key.as_str() {
                "group" => k.group = text,
                "version" => k.version = text,
                "kind" => k.kind = text,
                "status" => k.status = text,
                "namespaced" => k.namespaced = true,
                _ => {}
            }
            Ok(())
        })?;
    }
    Ok(k)
}

/// `<Name>Apply`, its builder methods and `impl ApplyConfiguration for <Name>`.
fn apply_struct(
    name: &Ident,
    fields: &[Field],
    rename_all: Option<&LitStr>,
    krate: &Path,
) -> Tokens {
    let apply = format_ident!("{}Apply", name);
    let rename_all = rename_all.map(|r| quote!(#[serde(rename_all = #r)]));
    let decls = fields.iter().map(|f| {
        let (ident, ty) = (&f.ident, &f.ty);
        let rename = f.rename.as_ref().map(|r| quote!(#[serde(rename = #r)]));
        let doc = format!("`{ident}`, when set.");
        quote! {
            #[doc = #doc]
            #rename
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub #ident: ::core::option::Option<<#ty as #krate::ApplyConfiguration>::Apply>,
        }
    });
    let builders = fields.iter().map(|f| {
        let (ident, ty) = (&f.ident, &f.ty);
        let doc = format!("Sets `{ident}`.");
        quote! {
            #[doc = #doc]
            pub fn #ident(mut self, value: impl ::core::convert::Into<<#ty as #krate::ApplyConfiguration>::Apply>) -> Self {
                self.#ident = ::core::option::Option::Some(value.into());
                self
            }
        }
    });
    let doc = format!("[`{name}`] with every field optional, for server-side apply.");
    quote! {
        #[doc = #doc]
        #[derive(Clone, Debug, Default, ::serde::Serialize)]
        #rename_all
        pub struct #apply {
            #(#decls)*
        }

        impl #apply {
            #(#builders)*
        }

        impl #krate::ApplyConfiguration for #name {
            type Apply = #apply;
        }
    }
}

/// The whole object's `<Kind>Apply` next to kube's `CustomResource`.
fn object_struct(spec: &Ident, kind: &str, k: &KubeAttrs, krate: &Path) -> syn::Result<Tokens> {
    let (Some(group), Some(version)) = (&k.group, &k.version) else {
        return Err(syn::Error::new_spanned(
            spec,
            "#[kube(kind)] needs group and version",
        ));
    };
    let api_version = match group.as_str() {
        "" => version.clone(),
        g => format!("{g}/{version}"),
    };
    let object = format_ident!("{}", kind);
    let apply = format_ident!("{}Apply", kind);
    let spec_apply = format_ident!("{}Apply", spec);
    let meta = quote!(#krate::meta::v1::ObjectMetaApply);
    let (status_field, status_builder) = match &k.status {
        Some(s) => {
            let ty: Type = syn::parse_str(s)?;
            (
                quote! {
                    /// `status`, when set.
                    #[serde(default, skip_serializing_if = "Option::is_none")]
                    pub status: ::core::option::Option<<#ty as #krate::ApplyConfiguration>::Apply>,
                },
                quote! {
                    /// Sets `status` (apply it with `client.status().apply_config(..)`).
                    pub fn status(mut self, value: <#ty as #krate::ApplyConfiguration>::Apply) -> Self {
                        self.status = ::core::option::Option::Some(value);
                        self
                    }
                },
            )
        }
        None => (quote!(), quote!()),
    };
    let (args, namespace) = match k.namespaced {
        true => (
            quote!(name: impl ::core::convert::Into<String>, namespace: impl ::core::convert::Into<String>),
            quote!(::core::option::Option::Some(namespace.into())),
        ),
        false => (
            quote!(name: impl ::core::convert::Into<String>),
            quote!(::core::option::Option::None),
        ),
    };
    let doc = format!("A whole [`{kind}`] for server-side apply: only what is set is sent.");
    Ok(quote! {
        #[doc = #doc]
        #[derive(Clone, Debug, Default, ::serde::Serialize)]
        pub struct #apply {
            /// `apiVersion`.
            #[serde(rename = "apiVersion", default, skip_serializing_if = "Option::is_none")]
            pub api_version: ::core::option::Option<String>,
            /// `kind`.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub kind: ::core::option::Option<String>,
            /// `metadata`: name and namespace, labels, annotations, owner references.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub metadata: ::core::option::Option<#meta>,
            /// `spec`, when set.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub spec: ::core::option::Option<#spec_apply>,
            #status_field
        }

        impl #apply {
            /// The object named `name` (in `namespace`), with its `apiVersion` and `kind`.
            pub fn new(#args) -> Self {
                Self {
                    api_version: ::core::option::Option::Some(#api_version.into()),
                    kind: ::core::option::Option::Some(#kind.into()),
                    metadata: ::core::option::Option::Some(#meta {
                        name: ::core::option::Option::Some(name.into()),
                        namespace: #namespace,
                        ..::core::default::Default::default()
                    }),
                    ..::core::default::Default::default()
                }
            }

            /// Sets `spec`.
            pub fn spec(mut self, value: #spec_apply) -> Self {
                self.spec = ::core::option::Option::Some(value);
                self
            }

            #status_builder
        }

        impl #krate::ObjectApply for #apply {
            type Resource = #object;

            fn metadata(&self) -> ::core::option::Option<&#meta> {
                self.metadata.as_ref()
            }
        }
    })
}
